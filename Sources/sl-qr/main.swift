import StarlineQR

QRTool.main()
