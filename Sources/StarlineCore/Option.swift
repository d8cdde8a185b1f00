/// A typed option: the spec that the parser, `--help`, the man page and the completions read, and the
/// conversion of its text into a `Value` — with the default and the range declared once, here, so they
/// cannot drift apart (swift-argument-parser's `@Option`, ripgrep's flag definitions).
///
///     static let size = Option<Int>.integer("size", short: "s", "PIXELS", help: "Module size.", default: 4, range: 1...100)
///     let pixels = try arguments[Self.size]   // Int, range-checked; a bad value is a usage error naming --size
///
/// Values resolve in the order flag > environment > profile > default (`ParsedArguments.resolved`).
public struct Option<Value: Sendable>: Sendable {
    public let spec: OptionSpec
    let convert: @Sendable (ParsedArguments) throws -> Value

    public init(spec: OptionSpec, convert: @escaping @Sendable (ParsedArguments) throws -> Value) {
        self.spec = spec
        self.convert = convert
    }

    public var long: String { spec.long }
}

extension ParsedArguments {
    /// The option's typed value. Reading an option that this command does not declare is a programming
    /// error (a typo, or another command's option): INTERNAL (exit 1) in every build — read as "not given"
    /// it would silently drop what the user asked for (an assert is compiled out of release builds).
    public subscript<Value>(_ option: Option<Value>) -> Value {
        get throws {
            guard spec(option.long) != nil else {
                throw StarlineError(
                    .internalError, "--\(option.long) is not an option of '\(([tool.name] + path).joined(separator: " "))'",
                    details: .object([("option", .string(option.long))]))
            }
            return try option.convert(self)
        }
    }

    /// A usage error for an option's value, naming where the value came from.
    func invalid(_ option: String, _ text: String, _ source: Source, expected: String) -> StarlineError {
        StarlineError(
            .usage, "invalid value '\(text)' for --\(option) (from \(source.rawValue)): expected \(expected)",
            details: .object([("option", .string(option)), ("value", .string(text))]))
    }
}

extension Option where Value == Bool {
    public static func flag(_ long: String, short: Character? = nil, help: String, hidden: Bool = false) -> Option {
        Option(spec: .flag(long, short: short, help: help, hidden: hidden)) { $0.flag(long) }
    }
}

extension Option where Value == String? {
    /// A text value, nil when given nowhere.
    public static func string(
        _ long: String, short: Character? = nil, _ valueName: String, help: String, env: String? = nil,
        configKey: String? = nil, completion: OptionSpec.Completion = .none, hidden: Bool = false
    ) -> Option {
        Option(
            spec: .value(
                long, short: short, valueName, help: help, env: env, configKey: configKey, completion: completion,
                hidden: hidden)
        ) { $0.value(long) }
    }
}

extension Option where Value == String {
    /// A text value with a default.
    public static func string(
        _ long: String, short: Character? = nil, _ valueName: String, help: String, default defaultValue: String,
        env: String? = nil, configKey: String? = nil, completion: OptionSpec.Completion = .none
    ) -> Option {
        Option(
            spec: .value(
                long, short: short, valueName, help: help, default: defaultValue, env: env, configKey: configKey,
                completion: completion)
        ) { $0.value(long) ?? defaultValue }
    }
}

extension Option where Value == [String] {
    /// A repeatable option: every value given on the command line, in order.
    public static func strings(
        _ long: String, short: Character? = nil, _ valueName: String, help: String,
        completion: OptionSpec.Completion = .none
    ) -> Option {
        Option(spec: .value(long, short: short, valueName, help: help, repeatable: true, completion: completion)) { $0.values(long) }
    }
}

extension Option where Value == Int {
    /// An integer in `range`, `defaultValue` when given nowhere.
    public static func integer(
        _ long: String, short: Character? = nil, _ valueName: String, help: String, default defaultValue: Int,
        range: ClosedRange<Int>, env: String? = nil, configKey: String? = nil
    ) -> Option {
        precondition(range.contains(defaultValue), "the default of --\(long) is outside its range")
        var spec = OptionSpec.value(
            long, short: short, valueName, help: help, default: String(defaultValue), env: env, configKey: configKey)
        spec.range = "\(range.lowerBound)–\(range.upperBound)"
        return Option(spec: spec) { try $0.integer(long, in: range) ?? defaultValue }
    }
}

extension Option where Value == Int? {
    /// An integer in `range`, nil when given nowhere (the command decides what absence means).
    public static func integer(
        _ long: String, short: Character? = nil, _ valueName: String, help: String, range: ClosedRange<Int>,
        env: String? = nil, configKey: String? = nil
    ) -> Option {
        var spec = OptionSpec.value(long, short: short, valueName, help: help, env: env, configKey: configKey)
        spec.range = "\(range.lowerBound)–\(range.upperBound)"
        return Option(spec: spec) { try $0.integer(long, in: range) }
    }
}

extension Option where Value: RawRepresentable & CaseIterable, Value.RawValue == String {
    /// One of an enumeration's cases by raw value; the choices shown and completed are its cases. (Closures,
    /// not key paths, below: a key path is instantiated at run time, which every start of every tool would pay.)
    public static func choice(
        _ long: String, short: Character? = nil, _ valueName: String, help: String,
        default defaultValue: Value, env: String? = nil, configKey: String? = nil
    ) -> Option {
        Option(
            spec: .value(
                long, short: short, valueName, help: help, default: defaultValue.rawValue,
                listChoices: { Value.allCases.map { $0.rawValue } }, env: env, configKey: configKey)
        ) { arguments in
            try arguments.choice(long, Value.self) ?? defaultValue
        }
    }
}

extension Option {
    /// One of an enumeration's cases, nil when given nowhere.
    public static func choice<Choice>(
        _ long: String, short: Character? = nil, _ valueName: String, help: String,
        env: String? = nil, configKey: String? = nil
    ) -> Option
    where Value == Choice?, Choice: RawRepresentable & CaseIterable & Sendable, Choice.RawValue == String {
        Option(
            spec: .value(
                long, short: short, valueName, help: help, listChoices: { Choice.allCases.map { $0.rawValue } }, env: env,
                configKey: configKey)
        ) { arguments in try arguments.choice(long, Choice.self) }
    }
}

extension Option where Value == BaseURL {
    /// A service base URL, validated by W4's rules wherever it comes from (flag, env, profile, default);
    /// a rejected value is a usage error naming its source.
    public static func baseURL(_ long: String, help: String, default defaultValue: String, env: String, configKey: String) -> Option {
        Option(spec: .value(long, "URL", help: help, default: defaultValue, env: env, configKey: configKey)) { arguments in
            guard let (text, source) = arguments.resolved(long) else { return try BaseURL(validating: defaultValue) }
            let name: String =
                switch source {
                case .flag: "--\(long)"
                case .environment: env
                case .profile: "profile key '\(configKey)'"
                case .defaultValue: "default \(long) URL"
                }
            return try BaseURL(validating: text, name: name)
        }
    }
}

extension Option {
    /// A value of a type this module does not know (a date, a duration of a domain): `convert` turns the
    /// resolved text (flag > environment > profile > default) into it and throws the usage error for a bad
    /// one; nil when the option is given nowhere.
    public static func converted<T>(_ spec: OptionSpec, _ convert: @escaping @Sendable (_ text: String) throws -> T) -> Option
    where Value == T? {
        Option(spec: spec) { arguments in try arguments.resolved(spec.long).map { try convert($0.value) } }
    }

    /// A repeatable option of such a type: `convert` gets every value given on the command line, in order.
    public static func convertedValues(_ spec: OptionSpec, _ convert: @escaping @Sendable (_ texts: [String]) throws -> Value) -> Option {
        precondition(spec.repeatable, "--\(spec.long) is not repeatable")
        return Option(spec: spec) { arguments in try convert(arguments.values(spec.long)) }
    }
}

extension ParsedArguments {
    func integer(_ long: String, in range: ClosedRange<Int>) throws -> Int? {
        try int(long, in: range)
    }

    func choice<Choice: RawRepresentable>(_ long: String, _ type: Choice.Type) throws -> Choice? where Choice.RawValue == String {
        guard let (text, source) = resolved(long) else { return nil }
        // The parser checks flag values against the choices; environment and profile values are checked here.
        guard let value = Choice(rawValue: text) else {
            throw invalid(long, text, source, expected: "one of \(spec(long)?.choices.joined(separator: ", ") ?? "")")
        }
        return value
    }
}
