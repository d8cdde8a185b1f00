/// Options that several commands include together (`ListOptions`, a tool's sign-in, vault or encoding
/// options): the group declares each option once as a static `Option`, lists those declarations once in
/// `specs`, and reads them into its typed value in `init`. A command includes the group with `Group.specs`
/// in its `CommandSpec` and `Group(arguments)` in its `Options` — it never lists, declares or reads a member
/// again, so a member's name, help, default and range exist in one place.
///
/// Plain arrays of specs and plain initializers: nothing is reflected or registered at start-up (a static
/// `let` is built when first read, so a tool builds only the specs of the commands it parses).
public protocol OptionGroup {
    /// The group's options, in the order help shows them.
    static var specs: [OptionSpec] { get }

    /// The group's typed values; reading a member the command's spec does not include is INTERNAL.
    init(_ arguments: ParsedArguments) throws
}

extension ListOptions: OptionGroup {}
