import DevServerCommands

DevServerTool.main()
