print("sl-qr")
