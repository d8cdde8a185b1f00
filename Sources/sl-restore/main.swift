import RestoreCommands

await RestoreTool.main()
