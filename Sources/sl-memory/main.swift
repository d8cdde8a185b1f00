import MemoryCommands

MemoryTool.main()
