import StarlineCore
import StarlineSQLite
import StarlineCrypto

/// The devserver's state: one SQLite database (in memory unless `--db FILE`), seeded from a JSON
/// fixture. All access happens under `DevServer`'s lock, so one connection serves every thread.
package final class DevServerStore {
    /// The server's clock (`DevServer.clock`): what expiries and timestamps are computed from.
    let clock: StarlineClock
    let db: SQLiteDatabase
    let fixture: JSON

    static let schema = """
        CREATE TABLE IF NOT EXISTS users(id TEXT PRIMARY KEY, name TEXT NOT NULL, display_name TEXT NOT NULL,
            password_salt BLOB NOT NULL, password_hash BLOB NOT NULL, phone TEXT, roles TEXT NOT NULL DEFAULT '[]',
            restricted INTEGER NOT NULL DEFAULT 0, password_updated_at INTEGER);
        CREATE TABLE IF NOT EXISTS apps(id TEXT PRIMARY KEY, name TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE IF NOT EXISTS sessions(id TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL, app_id TEXT NOT NULL,
            device_name TEXT NOT NULL, device_platform TEXT NOT NULL, ip TEXT NOT NULL, created_at INTEGER NOT NULL,
            last_seen_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, revoked_at INTEGER, auth_code TEXT);
        CREATE INDEX IF NOT EXISTS sessions_user ON sessions(user_id);
        CREATE TABLE IF NOT EXISTS auth_requests(id TEXT PRIMARY KEY, app_id TEXT NOT NULL, redirect_uri TEXT NOT NULL, state TEXT,
            challenge TEXT NOT NULL, expires_at INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS auth_codes(code TEXT PRIMARY KEY, app_id TEXT NOT NULL, user_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
            challenge TEXT NOT NULL, expires_at INTEGER NOT NULL, used_at INTEGER);
        CREATE TABLE IF NOT EXISTS device_codes(device_code TEXT PRIMARY KEY, user_code TEXT NOT NULL UNIQUE, app_id TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending', user_id TEXT, expires_at INTEGER NOT NULL, interval INTEGER NOT NULL,
            last_poll_ms INTEGER, issued INTEGER NOT NULL DEFAULT 0, slow_downs INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX IF NOT EXISTS auth_requests_expiry ON auth_requests(expires_at);
        CREATE INDEX IF NOT EXISTS auth_codes_expiry ON auth_codes(expires_at);
        CREATE INDEX IF NOT EXISTS device_codes_expiry ON device_codes(expires_at);
        CREATE TABLE IF NOT EXISTS sms_codes(phone TEXT PRIMARY KEY, code TEXT NOT NULL, expires_at INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS conversations(id TEXT PRIMARY KEY, kind TEXT NOT NULL, title TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS members(conversation_id TEXT NOT NULL, user_id TEXT NOT NULL, last_read_seq INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY(conversation_id, user_id));
        CREATE TABLE IF NOT EXISTS messages(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, client_id TEXT NOT NULL,
            conversation_id TEXT NOT NULL, sender_id TEXT NOT NULL, text TEXT NOT NULL, created_at INTEGER NOT NULL,
            UNIQUE(conversation_id, sender_id, client_id));
        CREATE TABLE IF NOT EXISTS friends(user_id TEXT NOT NULL, friend_id TEXT NOT NULL, conversation_id TEXT NOT NULL,
            created_at INTEGER NOT NULL, PRIMARY KEY(user_id, friend_id));
        CREATE TABLE IF NOT EXISTS friend_links(code TEXT PRIMARY KEY, user_id TEXT NOT NULL, expires_at INTEGER NOT NULL,
            redeemed_by TEXT, redeemed_at INTEGER);
        CREATE TABLE IF NOT EXISTS moments(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, client_id TEXT NOT NULL,
            author_id TEXT NOT NULL, text TEXT NOT NULL, created_at INTEGER NOT NULL, UNIQUE(author_id, client_id));
        CREATE TABLE IF NOT EXISTS events(seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, type TEXT NOT NULL,
            payload TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS events_user ON events(user_id, seq);
        CREATE TABLE IF NOT EXISTS revoke_requests(session_id TEXT PRIMARY KEY, count INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS server_settings(name TEXT PRIMARY KEY, value TEXT NOT NULL);
        """

    /// `scratch`: the file is the server's own, thrown away when it stops (`ScratchStore`), so no commit
    /// waits for the disk.
    init(path: String, fixture: JSON, scratch: Bool = false, clock: StarlineClock = .system) throws {
        self.clock = clock
        do {
            db = try SQLiteDatabase(path: path)
            if scratch { try db.disableSyncing() }
            self.fixture = fixture
            try db.execute(Self.schema)
            if try db.queryFirst("SELECT count(*) AS n FROM users")?.int("n") == 0 { try seed() }
        } catch let error as SQLiteError {
            throw error.starlineError
        }
    }

    /// The dev token of this database: `explicit` when given (`--dev-token`, `STARLINE_DEV_TOKEN`), else the one
    /// a former run kept here, else `generate()`'s. It is kept with the data, so a server restarted on the same
    /// `--db FILE` prints the same token and a script's `X-Dev-Token` keeps working; the file already holds
    /// every session token in the clear, so keeping this one beside them exposes nothing new. `reset` keeps it.
    func devToken(explicit: String?, generate: () -> String) throws -> String {
        do {
            return try db.transaction {
                if let explicit {
                    try db.run(
                        """
                        INSERT INTO server_settings(name, value) VALUES('dev_token', ?) ON CONFLICT(name) DO UPDATE SET value = \
                        excluded.value
                        """,
                        [.text(explicit)])
                    return explicit
                }
                if let kept = try db.queryFirst("SELECT value FROM server_settings WHERE name = 'dev_token'")?.string("value"),
                    !kept.trimmingWhitespace().isEmpty
                {
                    return kept
                }
                let token = generate()
                try db.run("INSERT OR REPLACE INTO server_settings(name, value) VALUES('dev_token', ?)", [.text(token)])
                return token
            }
        } catch let error as SQLiteError {
            throw error.starlineError
        }
    }

    /// Drops every row and loads the fixture again (`POST /__dev/reset`).
    func reset() throws {
        try db.transaction {
            for table in [
                "users", "apps", "sessions", "auth_requests", "auth_codes", "device_codes", "sms_codes", "conversations",
                "members", "messages", "friends", "friend_links", "moments", "events", "revoke_requests"
            ] {
                try db.run("DELETE FROM \(table)")
            }
            try db.run("DELETE FROM sqlite_sequence")
            try seedRows()
        }
    }

    /// Keeps a table of short-lived rows that unauthenticated requests add (sign-in requests, codes,
    /// device codes) bounded: rows expired for a while go (kept a little past expiry so late polls
    /// still get `expired_token`, not an unknown code), and past `Limits.maxPendingRows` the oldest.
    func prunePending(_ table: String) throws {
        try db.run("DELETE FROM \(table) WHERE expires_at <= ?", [.integer(clock.now().seconds - 600)])
        // Row ids only grow, so this keeps at most the newest maxPendingRows - 1, before the insert.
        try db.run(
            "DELETE FROM \(table) WHERE rowid <= (SELECT max(rowid) FROM \(table)) - ?", [.integer(Int64(Limits.maxPendingRows - 1))])
    }

    func seed() throws { try db.transaction { try seedRows() } }

    private func seedRows() throws {
        let now = clock.now().seconds
        for user in fixture["users"]?.arrayValue ?? [] {
            guard let id = user["id"]?.stringValue, let password = user["password"]?.stringValue else {
                throw StarlineError(.data, "seed: every user needs an id and a password")
            }
            try createUser(
                id: id, name: user["name"]?.stringValue ?? id, displayName: user["displayName"]?.stringValue ?? id,
                password: password, phone: user["phone"]?.stringValue, roles: user["roles"] ?? .array([]))
        }
        for app in fixture["apps"]?.arrayValue ?? [] {
            guard let id = app["id"]?.stringValue else { throw StarlineError(.data, "seed: every app needs an id") }
            try db.run("INSERT INTO apps(id, name) VALUES(?,?)", [.text(id), .text(app["name"]?.stringValue ?? id)])
        }
        for conversation in fixture["conversations"]?.arrayValue ?? [] {
            guard let id = conversation["id"]?.stringValue else { throw StarlineError(.data, "seed: every conversation needs an id") }
            let members = conversation["members"]?.arrayValue?.compactMap(\.stringValue) ?? []
            try db.run(
                "INSERT INTO conversations(id, kind, title) VALUES(?,?,?)",
                [
                    .text(id), .text(conversation["kind"]?.stringValue ?? (members.count == 2 ? "direct" : "group")),
                    .text(conversation["title"]?.stringValue ?? members.joined(separator: ", "))
                ])
            for member in members { try db.run("INSERT INTO members(conversation_id, user_id) VALUES(?,?)", [.text(id), .text(member)]) }
            for (i, message) in (conversation["messages"]?.arrayValue ?? []).enumerated() {
                try db.run(
                    "INSERT INTO messages(id, client_id, conversation_id, sender_id, text, created_at) VALUES(?,?,?,?,?,?)",
                    [
                        .text(Self.identifier("msg")), .text("seed-\(id)-\(i)"), .text(id),
                        .text(message["sender"]?.stringValue ?? members.first ?? ""), .text(message["text"]?.stringValue ?? ""),
                        .integer(now - Int64(3600 - i * 60))
                    ])
            }
            if conversation["kind"]?.stringValue == "direct", members.count == 2 {
                for (a, b) in [(members[0], members[1]), (members[1], members[0])] {
                    try db.run(
                        "INSERT OR IGNORE INTO friends(user_id, friend_id, conversation_id, created_at) VALUES(?,?,?,?)",
                        [.text(a), .text(b), .text(id), .integer(now)])
                }
            }
        }
        for session in fixture["sessions"]?.arrayValue ?? [] {
            guard let user = session["user"]?.stringValue else { continue }
            _ = try createSession(
                user: user, app: session["app"]?.stringValue ?? "workbench",
                deviceName: session["device"]?["name"]?.stringValue ?? "seeded device",
                platform: session["device"]?["platform"]?.stringValue ?? "linux", ip: "127.0.0.1",
                ttl: 30 * 86400, authCode: nil)
        }
    }

    static func passwordHash(_ password: String, salt: [UInt8]) -> [UInt8] {
        GenericHash.hash(Array(password.utf8), key: salt, length: 32)
    }

    static func identifier(_ prefix: String) -> String {
        // Bytes, not a String per hex pair: bulk creation makes 100,000 of these in one request.
        let hex = Array("0123456789abcdef".utf8)
        var bytes = Array(prefix.utf8) + [UInt8(ascii: "_")]
        for b in Sodium.randomBytes(10) { bytes += [hex[Int(b >> 4)], hex[Int(b & 15)]] }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func token() -> String { "slt_" + Base64.encodeURL(Sodium.randomBytes(32)) }

    func createUser(id: String, name: String, displayName: String, password: String, phone: String?, roles: JSON) throws {
        let salt = Sodium.randomBytes(16)
        try db.run(
            "INSERT INTO users(id, name, display_name, password_salt, password_hash, phone, roles) VALUES(?,?,?,?,?,?,?)",
            [
                .text(id), .text(name), .text(displayName), .blob(salt), .blob(Self.passwordHash(password, salt: salt)),
                phone.map(SQLiteValue.text) ?? .null, .text(roles.serialized())
            ])
    }

    /// One more DELETE that reached an existing session (`GET /__dev/revocations`). Kept in the database,
    /// one row per session ever targeted, so it is bounded by the sessions and goes with `reset`.
    func countRevokeRequest(session id: String) throws {
        try db.run(
            """
            INSERT INTO revoke_requests(session_id, count) VALUES(?, 1) ON CONFLICT(session_id) DO UPDATE SET count = \
            count + 1
            """,
            [.text(id)])
    }

    /// Creates a device session and returns (id, token).
    func createSession(
        user: String, app: String, deviceName: String, platform: String, ip: String, ttl: Int64,
        authCode: String?
    ) throws -> (id: String, token: String) {
        let id = Self.identifier("ses")
        let token = Self.token()
        let now = clock.now().seconds
        try db.run(
            """
            INSERT INTO sessions(id, token, user_id, app_id, device_name, device_platform, ip, created_at, last_seen_at, expires_at, auth_code)
            VALUES(?,?,?,?,?,?,?,?,?,?,?)
            """,
            [
                .text(id), .text(token), .text(user), .text(app), .text(deviceName), .text(platform), .text(ip),
                .integer(now), .integer(now), .integer(now + ttl), authCode.map(SQLiteValue.text) ?? .null
            ])
        return (id, token)
    }

    package func userJSON(_ id: String) throws -> JSON? {
        guard let row = try db.queryFirst("SELECT id, name, display_name FROM users WHERE id = ?", [.text(id)]) else { return nil }
        return Self.userJSON(row)
    }

    static func userJSON(_ row: SQLiteRow) -> JSON {
        .object([
            ("id", .optional(row.string("id"))), ("name", .optional(row.string("name"))),
            ("displayName", .optional(row.string("display_name")))
        ])
    }

    func roles(_ user: String) throws -> JSON {
        let text = try db.queryFirst("SELECT roles FROM users WHERE id = ?", [.text(user)])?.string("roles") ?? "[]"
        return (try? JSON.parse(text)) ?? .array([])
    }

    /// The default fixture: the users, apps and conversations a fresh server starts with (README, sl-devserver).
    static let defaultFixture: JSON = try! JSON.parse(
        """
        {
          "users": [
            {"id": "alice", "name": "alice", "displayName": "Alice", "password": "alice-pass", "phone": "+8613800000001", "roles": ["admin"]},
            {"id": "bob", "name": "bob", "displayName": "Bob", "password": "bob-pass", "phone": "+8613800000002", "roles": []},
            {"id": "carol", "name": "carol", "displayName": "Carol", "password": "carol-pass", "phone": "+8613800000003", "roles": []}
          ],
          "apps": [
            {"id": "workbench", "name": "Starline Workbench"},
            {"id": "com.example.game", "name": "Example Game"}
          ],
          "conversations": [
            {"id": "c_alice_bob", "kind": "direct", "title": "Alice & Bob", "members": ["alice", "bob"],
             "messages": [{"sender": "alice", "text": "Hi Bob!"}, {"sender": "bob", "text": "Hi Alice, welcome to Starline."}]},
            {"id": "c_team", "kind": "group", "title": "Team", "members": ["alice", "bob", "carol"],
             "messages": [{"sender": "carol", "text": "Stand-up at ten."}]}
          ],
          "sessions": [
            {"user": "alice", "app": "workbench", "device": {"name": "Alice's phone", "platform": "ios"}},
            {"user": "alice", "app": "com.example.game", "device": {"name": "Alice's tablet", "platform": "ipados"}},
            {"user": "bob", "app": "workbench", "device": {"name": "Bob's laptop", "platform": "linux"}}
          ]
        }
        """)
}
