/// One device session to revoke: the caller's own (`user` nil: `DELETE /api/sessions/{id}`) or a user's, as an
/// admin (`DELETE /api/admin/users/{uid}/sessions/{id}`). The bulk module's item: the journal, the shards and
/// the item index speak of targets; the session module sends them (`SessionRevoker`).
public struct RevocationTarget: Sendable, Hashable {
    public var id: String
    public var user: String?

    public init(id: String, user: String?) {
        self.id = id
        self.user = user
    }
}
