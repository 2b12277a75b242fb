import BatchFetchFiles
import BatchFetchNetwork
import BatchFetchSpec
import Foundation

/// Runs a run's hooks (Docs/Hooks.md): the thin I/O under ``HookPlan``. A hook never fails the
/// run and never changes its exit code: whatever an action does — exits non-zero, hangs past its
/// timeout, answers 500, never answers — becomes a warning and a ``HookRecord``.
///
/// URL and ping actions go out as a download would: the run's transport (its TLS and proxy
/// settings), the redirect and credential policies of a job, and its redactor over every
/// message, so a token from `${VAR}`, a userinfo or a query value never reaches a log or the
/// report.
package struct HookRunner: Sendable {
    let hooks: Hooks
    /// The manifest's path as given, and its directory, where commands run.
    let manifestPath: String
    let manifestDirectory: String
    let transport: any HTTPTransport
    /// batchfetch's environment: a command's, with the `BATCHFETCH_*` variables added, and where
    /// the network's proxy and TLS settings are read.
    let environment: [String: String]
    /// Waits between tries of a URL action (tests pass one that returns at once).
    let sleep: @Sendable (Double) async -> Void
    /// A line for stderr: a command's output (`hook: …`) and the warnings.
    let log: @Sendable (String) -> Void

    package init(hooks: Hooks, manifestPath: String, manifestDirectory: String, transport: any HTTPTransport,
                 environment: [String: String], sleep: @escaping @Sendable (Double) async -> Void = { try? await Task.sleep(for: .seconds($0)) },
                 log: @escaping @Sendable (String) -> Void) {
        self.hooks = hooks
        self.manifestPath = manifestPath
        self.manifestDirectory = manifestDirectory
        self.transport = transport
        self.environment = environment
        self.sleep = sleep
        self.log = log
    }

    /// Runs `event`'s actions in list order. Once `interruption` is set (a signal while
    /// `on_start`'s hooks run), the action running is stopped — its command's process group
    /// killed, its request cancelled — and the rest are not run.
    package func fire(_ event: Hooks.Event, summary: RunSummary, interruption: Interruption? = nil) async -> [HookRecord] {
        var records: [HookRecord] = []
        for action in hooks.actions[event] ?? [] {
            if interruption?.isInterrupted == true { break }
            var record = await perform(action, event: event, summary: summary, interruption: interruption)
            record.event = event.rawValue
            if !record.ok { log("batchfetch: warning: hook \(event.rawValue) \(action.name): \(record.error ?? "failed")") }
            records.append(record)
        }
        return records
    }

    private func perform(_ action: Hooks.Action, event: Hooks.Event, summary: RunSummary, interruption: Interruption?) async -> HookRecord {
        switch action.kind {
        case .command(let words):
            return await command(words, timeout: action.timeout, event: event, summary: summary, interruption: interruption)
        case .url(let target, let headers):
            return await post(target, headers: headers + [Job.Header(name: "Content-Type", value: TemplatedString(literal: "application/json"))],
                              body: summary.json, timeout: action.timeout, kind: "url", interruption: interruption)
        case .ping(let base):
            let target = TemplatedString(resolved: HookPlan.pingURL(base.resolved, event: event, exitCode: summary.exitCode),
                                         redacted: HookPlan.pingURL(base.redacted, event: event, exitCode: summary.exitCode),
                                         secrets: base.secrets)
            return await post(target, headers: [Job.Header(name: "Content-Type", value: TemplatedString(literal: "text/plain; charset=utf-8"))],
                              body: Data(summary.text.utf8), timeout: action.timeout, kind: "ping", interruption: interruption)
        }
    }

    private func command(_ words: [TemplatedString], timeout: Double, event: Hooks.Event, summary: RunSummary,
                         interruption: Interruption?) async -> HookRecord {
        let variables = environment.merging(HookPlan.environment(event, summary: summary, manifestPath: manifestPath)) { $1 }
        var stopWhen: (@Sendable () -> Bool)?
        if let interruption { stopWhen = { interruption.isInterrupted } }
        let ended = await ChildProcess.run(words.map(\.resolved), timeout: timeout, environment: variables,
                                           directory: manifestDirectory, outputLimit: 1 << 20, stopWhen: stopWhen)
        let redactor = Redactor(words)
        for stream in [ended.stdout ?? Data(), ended.stderr] {
            for line in String(decoding: stream, as: UTF8.self).split(whereSeparator: \.isNewline) {
                log("hook: " + redactor.redact(String(line)))
            }
        }
        var record = HookRecord(event: event.rawValue, action: "command", ok: false, exitCode: ended.exitCode)
        let program = words.first?.redacted ?? ""
        if let notStarted = ended.notStarted {
            record.error = redactor.redact(notStarted)
        } else if ended.stopped {
            record.exitCode = nil
            record.error = "\(program) was stopped: the run was interrupted"
        } else if ended.timedOut {
            record.exitCode = nil
            record.error = "\(program) did not finish within \(ByteFormat.seconds(timeout)) s (killed)"
        } else if let signal = ended.signal {
            record.error = "\(program) was killed by signal \(signal)"
        } else if ended.exitCode != 0 {
            record.error = "\(program) exited \(ended.exitCode ?? -1)"
        } else {
            record.ok = true
        }
        return record
    }

    /// A `POST` of `body`, tried up to three times as ``HookPlan/retry(after:status:failure:)``
    /// says.
    private func post(_ target: TemplatedString, headers: [Job.Header], body: Data, timeout: Double, kind: String,
                      interruption: Interruption?) async -> HookRecord {
        var settings = JobSettings()
        settings.timeout = timeout
        let job = Job(id: "hook", urls: [target], dest: TemplatedString(literal: "hook"), method: .post, headers: headers,
                      settings: settings, source: JobSource(job: .start, id: .start, dest: .start, dependsOn: [], checksumsFrom: nil))
        let network = JobNetwork(job: job, transport: transport, perHost: 2, environment: environment)
        let probe = MirrorProbe(job: job, network: network, hosts: HostLimiter(limit: 2))
        var attempt = 0
        while true {
            attempt += 1
            let (status, failure) = await probe.send(method: "POST", extra: [], body: body, interruption: interruption)
            if let status, (200...299).contains(status) { return HookRecord(event: "", action: kind, ok: true, status: status) }
            if interruption?.isInterrupted != true, let delay = HookPlan.retry(after: attempt, status: status, failure: failure) {
                await sleep(delay)
                continue
            }
            let reason = status.map { "HTTP \($0)" } ?? failure?.message ?? "no response"
            let tries = attempt == 1 ? "" : " after \(attempt) tries"
            return HookRecord(event: "", action: kind, ok: false, status: status,
                              error: network.redactor.redact("\(target.redacted): \(reason)\(tries)"))
        }
    }
}
