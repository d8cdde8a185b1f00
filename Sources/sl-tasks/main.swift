import TasksCommands

TasksTool.main()
