/// `hooks:` (Docs/Hooks.md): what an unattended run tells the world when it starts and when it
/// ends — a command, a POST of the run's summary, or a healthchecks.io-style ping per event.
///
/// Validated here like any other key (`file:line:col` errors; `${VAR}` expanded and
/// remembered as secret, so a token in a hook URL or header is redacted wherever it appears);
/// the engine's `HookPlan` decides which actions an exit code fires and what each sends.
public struct Hooks: Sendable, Equatable {
    /// When an action runs: the keys under `hooks:`, in the order a run fires them.
    public enum Event: String, Sendable, CaseIterable {
        case onStart = "on_start", onSuccess = "on_success", onFailure = "on_failure", onFinish = "on_finish"
    }

    /// One thing a hook does.
    public struct Action: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// A program and its arguments, run without a shell in the manifest's directory (a
            /// program with a `/` was made absolute against it; a bare name is looked up in `PATH`).
            case command([TemplatedString])
            /// A `POST` of the run's summary as JSON, with these headers.
            case url(TemplatedString, headers: [Job.Header])
            /// A healthchecks.io-style ping: `URL/start`, `URL`, `URL/fail` or `URL/EXIT_CODE`.
            case ping(TemplatedString)
        }

        public var kind: Kind
        /// Seconds the action may take (a URL hook: each try).
        public var timeout: Double

        public init(kind: Kind, timeout: Double = Action.defaultTimeout) {
            self.kind = kind
            self.timeout = timeout
        }

        public static let defaultTimeout = 30.0

        /// The action's kind as the report names it: `command`, `url` or `ping`.
        public var name: String {
            switch kind {
            case .command: "command"
            case .url: "url"
            case .ping: "ping"
            }
        }
    }

    /// The actions of each event, in list order.
    public var actions: [Event: [Action]] = [:]

    public init(actions: [Event: [Action]] = [:]) {
        self.actions = actions
    }

    public var isEmpty: Bool { actions.values.allSatisfy(\.isEmpty) }
}
