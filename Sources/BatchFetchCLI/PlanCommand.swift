import ArgumentParser
import BatchFetchSpec

/// `batchfetch plan`: shows the execution order and what already exists locally, offline.
struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show the jobs in execution order, their levels, and what already exists locally.",
        discussion: HelpText.reflowed("""
            Validates the manifest, orders the jobs by dependency level (jobs of one level can run
            in parallel), and for each job prints its URL(s) with secrets redacted, its
            destination, the expected size and checksum, and whether the destination (or a
            resumable .part) already exists. No network access.

            Examples:
              batchfetch plan datasets.yaml
              batchfetch plan --format json datasets.yaml
              batchfetch plan --format dot datasets.yaml | dot -Tsvg > plan.svg
            """)
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, dot
    }

    @OptionGroup var manifest: ManifestArgument

    @Option(help: "Output format: text, json or dot (Graphviz).", completion: .list(["text", "json", "dot"]))
    var format: Format = .text

    func run() throws {
        let plan = Plan(manifest: try manifest.load())
        var out = BufferedOutput()
        defer { out.flush() }
        switch format {
        case .text: PlanFormatter.text(plan, to: &out)
        case .json: PlanFormatter.json(plan, to: &out)
        case .dot: PlanFormatter.dot(plan, to: &out)
        }
    }
}
