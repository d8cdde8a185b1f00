import StarlineSQLite

/// The tables of `chat.db` (the chat cache and the outbox, W5, W9), as numbered migrations. Every row is
/// scoped by `account` (`ChatAccount.key`: the chat base URL and the user id), so one file serves every
/// account and nothing read or sent as one account is ever shown or sent as another (S14).
/// Add a change as the next migration; never edit one that has shipped.
enum ChatSchema {
    static let migrations = [
        SQLiteMigration(
            version: 1, name: "chat cache and outbox",
            sql: """
                CREATE TABLE messages (
                    account TEXT NOT NULL,
                    id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    client_id TEXT,
                    sender_id TEXT,
                    text TEXT NOT NULL,
                    created_at TEXT,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY (account, id)
                ) WITHOUT ROWID;
                CREATE INDEX messages_by_seq ON messages (account, conversation_id, seq);
                -- covered_from: the lowest seq from which the cache holds every message of the conversation
                -- (0: from its first message; NULL: unknown). Reset by a gap in the event stream.
                CREATE TABLE conversations (
                    account TEXT NOT NULL,
                    id TEXT NOT NULL,
                    json TEXT NOT NULL,
                    fetched_at INTEGER NOT NULL,
                    covered_from INTEGER,
                    PRIMARY KEY (account, id)
                ) WITHOUT ROWID;
                CREATE TABLE sync_state (
                    account TEXT PRIMARY KEY NOT NULL,
                    cursor TEXT,
                    synced_at INTEGER,
                    conversations_at INTEGER
                ) WITHOUT ROWID;
                CREATE TABLE friends (
                    account TEXT NOT NULL,
                    id TEXT NOT NULL,
                    json TEXT NOT NULL,
                    PRIMARY KEY (account, id)
                ) WITHOUT ROWID;
                CREATE TABLE moments (
                    account TEXT NOT NULL,
                    id TEXT NOT NULL,
                    client_id TEXT,
                    json TEXT NOT NULL,
                    PRIMARY KEY (account, id)
                ) WITHOUT ROWID;
                -- The durable outbox (W5): one row per clientId, minted and stored before the first attempt.
                -- owner: the process sending it now ("pid:starttime"), while state = 'sending'.
                CREATE TABLE outbox (
                    account TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    client_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    text TEXT NOT NULL,
                    state TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    owner TEXT,
                    server_json TEXT,
                    error_json TEXT,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY (account, kind, client_id)
                ) WITHOUT ROWID;
                CREATE INDEX outbox_by_state ON outbox (account, state, seq);
                -- Named consumers of `tail --cursor NAME`: the server cursor after the last event they were given,
                -- and per conversation the highest message seq delivered (so a backfill after a gap repeats nothing).
                CREATE TABLE consumers (
                    account TEXT NOT NULL,
                    name TEXT NOT NULL,
                    cursor TEXT,
                    conversation_filter TEXT,
                    delivered INTEGER NOT NULL DEFAULT 0,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (account, name)
                ) WITHOUT ROWID;
                CREATE TABLE consumer_positions (
                    account TEXT NOT NULL,
                    name TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY (account, name, conversation_id)
                ) WITHOUT ROWID;
                """),
        // W5: the entries of one conversation leave in queue order, so a claim asks for the earliest entry of the
        // conversation queued before it and not sent yet. Only entries not sent are indexed: the sent ones pile
        // up and are never asked about. Queries must say `kind = 'message' AND state != 'sent'` to use it.
        SQLiteMigration(
            version: 2, name: "outbox entries not sent, per conversation",
            sql: """
                CREATE INDEX outbox_unsent_by_conversation ON outbox (account, conversation_id, seq)
                    WHERE kind = 'message' AND state != 'sent';
                """),
        // W5: messages keyed by their place in the conversation, (account, conversation, seq), not by the server's id.
        // Ids are random, so a sync's rows landed all over a B-tree keyed by id: each commit of 10,000 events
        // rewrote most of the table's leaves (100,000 messages left 100 MB of WAL for a 25 MB cache, and the
        // checkpoints' fsyncs were a third of the sync's wall time). Seqs arrive in order, so rows are appended
        // at the end of their conversation, and the key is the order every read asks for (the index it needed
        // goes). A message is one seq of its conversation (the contract's `seq`); the same seq again is the
        // same message, updated.
        SQLiteMigration(
            version: 3, name: "messages keyed by conversation and seq",
            sql: """
                CREATE TABLE messages_by_seq_key (
                    account TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    id TEXT NOT NULL,
                    client_id TEXT,
                    sender_id TEXT,
                    text TEXT NOT NULL,
                    created_at TEXT,
                    PRIMARY KEY (account, conversation_id, seq)
                ) WITHOUT ROWID;
                INSERT OR REPLACE INTO messages_by_seq_key (account, conversation_id, seq, id, client_id, sender_id, text, created_at)
                    SELECT account, conversation_id, seq, id, client_id, sender_id, text, created_at FROM messages
                    ORDER BY account, conversation_id, seq;
                DROP TABLE messages;
                ALTER TABLE messages_by_seq_key RENAME TO messages;
                """)
    ]
}
