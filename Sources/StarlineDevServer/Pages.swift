import StarlineCore

/// The HTML pages of the sign-in flows: small, self-contained, usable in any browser.
enum Pages {
    static func escape(_ s: String) -> String { HTMLText.escape(s) }

    static func page(_ title: String, _ body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title)) · Starline</title>
        <style>body{font-family:system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem;color:#1b1f24}
        label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.5rem;box-sizing:border-box}
        .buttons{display:flex;gap:.5rem;margin-top:1.2rem}button{flex:1;padding:.6rem}.error{color:#b42318}</style>
        </head><body><h1>\(escape(title))</h1>
        \(body)
        </body></html>
        """
    }

    static func signIn(app: String, requestId: String, message: String?) -> String {
        page(
            "Sign in to Starline",
            """
            <p>The application <strong>\(escape(app))</strong> asks to sign in with your Starline account.</p>
            \(message.map { "<p class=\"error\" role=\"alert\">\(escape($0))</p>" } ?? "")
            <form method="post" action="/oauth/authorize">
            <input type="hidden" name="request_id" value="\(escape(requestId))">
            <label for="username">User name</label><input id="username" name="username" autocomplete="username" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password">
            <div class="buttons"><button type="submit" name="action" value="approve">Approve</button>
            <button type="submit" name="action" value="deny" formnovalidate>Deny</button></div>
            </form>
            """)
    }

    static func device(userCode: String, message: String?) -> String {
        page(
            "Sign in a device",
            """
            <p>Enter the code shown on your device and sign in to approve it.</p>
            \(message.map { "<p class=\"error\" role=\"alert\">\(escape($0))</p>" } ?? "")
            <form method="post" action="/oauth/device">
            <label for="user_code">Code</label><input id="user_code" name="user_code" value="\(escape(userCode))" required>
            <label for="username">User name</label><input id="username" name="username" autocomplete="username">
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password">
            <div class="buttons"><button type="submit" name="action" value="approve">Approve</button>
            <button type="submit" name="action" value="deny">Deny</button></div>
            </form>
            """)
    }

    static func error(_ title: String, _ text: String) -> String { page(title, "<p class=\"error\">\(escape(text))</p>") }
    static func done(_ title: String, _ text: String) -> String { page(title, "<p>\(escape(text))</p>") }
}
