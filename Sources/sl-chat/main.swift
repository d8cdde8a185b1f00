import ChatCommands

await ChatTool.main()
