import StarlineCore
import StarlinePlatform
import PlatformCommands

/// Where `password` and `reset confirm` read their secrets: never argv.
enum SecretOptions {
    static let passwordFD = Option<Int?>.integer(
        "password-fd", "N", help: "Read the secrets from descriptor N, one a line, instead of the terminal or stdin.", range: 0...1_000_000)
}

/// `sl-sessions password`: change the password; this session stays, the others are revoked (S16).
enum PasswordCommand: AsyncCommand {
    static let spec = CommandSpec(
        "password", abstract: "Change the password (keeps this session, revokes the others)",
        discussion: """
            The current and the new password are asked on the terminal without echo (the new one twice); without a \
            terminal they are read from stdin or --password-fd N, one a line: current, then new. Never from the command \
            line. Prints {\"changed\":true,\"revokedOthers\":N}.
            """,
        options: [SecretOptions.passwordFD.spec],
        examples: [Example("printf '%s\\n%s\\n' \"$OLD\" \"$NEW\" | sl-sessions password", "Change it from a script.")],
        exitStatuses: [
            (.ok, "changed"), (.forbidden, "the current password is wrong"),
            (.usage, "a secret is missing or the new one is refused as too weak"),
            (.sessionEnded, "the server ended this session"), (.transient, "the server could not be reached")
        ])

    struct Options {
        var passwordFD: Int?
        var platform: PlatformOptions
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(passwordFD: try arguments[SecretOptions.passwordFD], platform: try PlatformOptions(arguments))
    }

    @MainActor
    static func run(_ options: Options, _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options.platform, context, network: true)
        var secrets = SecretInput(SecretInput.source(fd: options.passwordFD, io: context.io))
        let old = try secrets.read("Current password: ", what: "current password")
        let new = try secrets.read("New password: ", what: "new password")
        if case .terminal = SecretInput.source(fd: options.passwordFD, io: context.io) {
            guard try secrets.read("New password again: ", what: "new password") == new else {
                throw StarlineError(.usage, "the two new passwords differ; nothing was changed")
            }
        }
        let revoked = try await client.changePassword(old: old, new: new)
        context.output.emit(.object([("changed", .bool(true)), ("revokedOthers", .int(revoked))]))
        return .ok
    }
}

/// `sl-sessions reset request|confirm PHONE`: reset a forgotten password with an SMS code.
enum ResetRequestCommand: AsyncCommand {
    static let spec = CommandSpec(
        "request", abstract: "Send a reset code by SMS to PHONE",
        discussion: "The server answers alike whether or not an account has that number. Prints {\"requested\":true,\"phone\":…}.",
        arguments: [ArgumentSpec("PHONE", help: "The account's phone number, e.g. +8613800000002.")])

    static func options(_ arguments: ParsedArguments) throws -> (phone: String, platform: PlatformOptions) {
        guard let phone = arguments.positionals.first, arguments.positionals.count == 1 else {
            throw StarlineError(.usage, "give one PHONE")
        }
        return (phone, try PlatformOptions(arguments))
    }

    @MainActor
    static func run(_ options: (phone: String, platform: PlatformOptions), _ context: CommandContext) async throws -> ExitStatus {
        let client = try PlatformToolSupport.client(options.platform, context, network: true)
        try await client.platform.requestSMSReset(phone: options.phone)
        context.output.emit(.object([("requested", .bool(true)), ("phone", .string(options.phone))]))
        return .ok
    }
}

enum ResetConfirmCommand: AsyncCommand {
    static let spec = CommandSpec(
        "confirm", abstract: "Set a new password with the SMS code (signs out everywhere, here too)",
        discussion: """
            The code and the new password are asked on the terminal (the password without echo, twice), or read from \
            stdin or --password-fd N, one a line: code, then password. On success the server revokes every session of the \
            account and the local session is cleared (S16). Prints {\"reset\":true,\"revoked\":N}.
            """,
        options: [SecretOptions.passwordFD.spec],
        arguments: [ArgumentSpec("PHONE", help: "The phone number the code was sent to.")],
        exitStatuses: [
            (.ok, "reset; the local session is cleared"), (.usage, "a wrong or burnt code, a weak password, or a missing secret"),
            (.transient, "the server could not be reached")
        ])

    static func options(_ arguments: ParsedArguments) throws -> (phone: String, passwordFD: Int?, platform: PlatformOptions) {
        guard let phone = arguments.positionals.first, arguments.positionals.count == 1 else {
            throw StarlineError(.usage, "give one PHONE")
        }
        return (phone, try arguments[SecretOptions.passwordFD], try PlatformOptions(arguments))
    }

    @MainActor
    static func run(_ options: (phone: String, passwordFD: Int?, platform: PlatformOptions), _ context: CommandContext) async throws
        -> ExitStatus
    {
        let client = try PlatformToolSupport.client(options.platform, context, network: true)
        let source = SecretInput.source(fd: options.passwordFD, io: context.io)
        var secrets = SecretInput(source)
        let code = try secrets.read("SMS code: ", what: "code")
        let new = try secrets.read("New password: ", what: "new password")
        if case .terminal = source {
            guard try secrets.read("New password again: ", what: "new password") == new else {
                throw StarlineError(.usage, "the two new passwords differ; nothing was changed")
            }
        }
        let revoked = try await client.confirmSMSReset(phone: options.phone, code: code, newPassword: new)
        context.output.emit(.object([("reset", .bool(true)), ("revoked", .int(revoked))]))
        return .ok
    }
}
