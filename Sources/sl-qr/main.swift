import QRCommands

QRTool.main()
