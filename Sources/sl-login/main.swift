import LoginCommands

await LoginTool.main()
