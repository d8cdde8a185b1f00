import StarlineDevServer

DevServerTool.main()
