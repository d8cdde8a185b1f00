import SessionsCommands

await SessionsTool.main()
