import ChatCommands
import DevServerCommands
import LoginCommands
import MemoryCommands
import QRCommands
import RestoreCommands
import SessionsCommands
import StarlineCore
import StarlineTestSupport
import TasksCommands
import Testing

/// Every tool's front end, listed once for the tests that walk all of them (OptionCoverageTests,
/// DurationOptionTests, OutputFailureTests), and checked against Package.swift's `tools` list, so a new tool
/// cannot be left out of a walk.
enum ToolRegistry {
    /// A tool of either runner kind, reduced to what the walks need: its spec, and the in-process conversion of
    /// a command line into the typed options of its command (`CommandTree.checkOptions`: what a run does first,
    /// without running).
    struct AnyTool: Sendable {
        var spec: ToolSpec
        var check: @Sendable ([String], IOStreams) -> Outcome
    }

    enum Outcome: Equatable { case accepted, rejected(StarlineCore.ExitStatus, String) }

    static let all: [AnyTool] = [
        wrap(QRTool.tool), wrap(TasksTool.tool), wrap(DevServerTool.tool), wrap(LoginTool.tool),
        wrap(RestoreTool.tool), wrap(SessionsTool.tool), wrap(MemoryTool.tool), wrap(ChatTool.tool)
    ]

    static var specs: [ToolSpec] { all.map(\.spec) }
    static var names: [String] { all.map(\.spec.name) }

    static func wrap<Runner>(_ tool: Tool<Runner>) -> AnyTool {
        AnyTool(spec: tool.spec) { words, io in
            switch ToolMain.prepare(tool, words, io: io) {
            case .exit(let status): return .rejected(status, "")
            case .run(let context, _):
                do {
                    guard try tool.commands.checkOptions(at: context.arguments.path, context.arguments) else {
                        return .rejected(.internalError, "no options check for \(context.arguments.path)")
                    }
                    return .accepted
                } catch {
                    return .rejected(ToolMain.finish(context, .failure(error)), "")
                }
            }
        }
    }
}

@Suite struct ToolRegistryTests {
    @Test("the registry holds exactly the tools Package.swift declares (scripts/tools), each once")
    func registryIsPackageSwiftsTools() {
        #expect(ToolRegistry.names.sorted() == GeneratedDocsTests.tools.sorted())
        #expect(Set(ToolRegistry.names).count == ToolRegistry.names.count)
        #expect(Set(Tools.toolNames) == Set(ToolRegistry.names), "StarlineTestSupport's Tools.toolNames")
    }
}
