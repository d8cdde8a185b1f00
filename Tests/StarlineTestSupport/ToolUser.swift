import Foundation
import StarlineCore

/// Who the built tools run as in the tests: the people who use them are never root.
///
/// When the test process is root (as in CI), every tool — and every script or program that runs one — is
/// started under an ordinary account, `starline-test` (created here when it does not exist), through
/// setpriv(1): real, effective and saved uid and gid set, no supplementary groups, nothing else changed. The
/// directories a run reads or writes are handed to that user first (`handOver`): the temporary directories
/// named by its arguments, environment, standard input or working directory, with every entry in them that the
/// test process (root) made. Entries the test gave to another uid on purpose (`chown` to 65534 to test a trust
/// rule) keep their owner.
///
/// When the test process is an ordinary user, the tools run as that user and nothing is changed.
/// `STARLINE_TEST_AS_ROOT=1` keeps root for everything (to compare with the old behaviour; never in CI).
public enum ToolUser {
    public struct Account: Sendable, Equatable {
        public let name: String
        public let uid: uid_t
        public let gid: gid_t
    }

    /// The account tools run as when the test process is root.
    public static let accountName = "starline-test"

    /// The account the tools run under, nil when that is the test process's own.
    public static let dropped: Account? = {
        guard geteuid() == 0, ProcessInfo.processInfo.environment["STARLINE_TEST_AS_ROOT"] != "1" else { return nil }
        if let account = lookup() { return prepared(account) }
        // useradd takes /etc/passwd's lock, so two test processes creating it at once cannot both succeed;
        // whichever lost finds the account made by the other.
        _ = try? Tools.runInstalled(
            "/usr/sbin/useradd",
            ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", accountName],
            runAs: .testProcess)
        guard let account = lookup() else {
            preconditionFailure("cannot create the test account \(accountName) (useradd): the tools would run as root")
        }
        return prepared(account)
    }()

    /// The uid and gid a tool of the tests runs as: the dropped account's, or the test process's own.
    public static var uid: uid_t { dropped?.uid ?? geteuid() }
    public static var gid: gid_t { dropped?.gid ?? getegid() }

    private static func lookup() -> Account? {
        guard let entry = getpwnam(accountName) else { return nil }
        return Account(name: accountName, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    /// The built tools and the repository's files (test images, scripts the tests run) must be reachable by
    /// the account: a checkout under a directory only root may enter (`mktemp -d`, /root) gets an ACL entry
    /// that lets the account pass through each such directory (search only: it lists none of them).
    private static func prepared(_ account: Account) -> Account {
        for target in [Tools.binDirectory, repositoryRootForTests] {
            var directories: [String] = []
            var path = target
            while path.count > 1 {
                directories.append(path)
                path = (path as NSString).deletingLastPathComponent
            }
            for directory in directories.reversed() where !canSearch(directory, account) {
                let run = try? Tools.runInstalled("/usr/bin/setfacl", ["-m", "u:\(account.uid):x", directory], runAs: .testProcess)
                precondition(
                    run?.status == 0,
                    "\(account.name) cannot enter \(directory) and setfacl failed (scripts/bootstrap installs acl): \(run?.stderrText ?? "")"
                )
            }
        }
        return account
    }

    /// Whether `account` may search `directory`, as the kernel decides it (test(1) under setpriv).
    private static func canSearch(_ directory: String, _ account: Account) -> Bool {
        (try? Tools.runInstalled(setpriv, arguments(account) + ["/usr/bin/test", "-x", directory], runAs: .testProcess))?.status == 0
    }

    static let setpriv = "/usr/bin/setpriv"

    /// setpriv's arguments before the program: the account's uid and gid, no supplementary groups.
    static func arguments(_ account: Account) -> [String] {
        ["--reuid=\(account.uid)", "--regid=\(account.gid)", "--clear-groups", "--"]
    }

    /// Gives `account` every entry under each live temporary directory that `words` name, and those
    /// directories: what the test process made there is the user's, as files a user prepares in their own home
    /// are. Entries owned by anyone but root are left alone.
    static func handOver(mentionedIn words: [String], to account: Account) {
        for directory in TemporaryDirectory.live() where words.contains(where: { $0.contains(directory) }) {
            giveRootEntries(directory, to: account)
        }
    }

    private static func giveRootEntries(_ path: String, to account: Account) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_uid == 0 { _ = lchown(path, account.uid, account.gid) }
        guard info.st_mode & S_IFMT == S_IFDIR, let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for name in names { giveRootEntries(path + "/" + name, to: account) }
    }
}

/// The repository's root, from this file's path (`Tests/StarlineTestSupport/ToolUser.swift`).
public let repositoryRootForTests: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()
