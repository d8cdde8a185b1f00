import StarlinePlatform

await RestoreTool.main()
