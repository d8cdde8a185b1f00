import StarlineWorkspace

TasksTool.main()
