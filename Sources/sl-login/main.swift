import StarlinePlatform

await LoginTool.main()
