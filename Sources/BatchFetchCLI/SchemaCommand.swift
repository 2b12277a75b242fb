import ArgumentParser

/// `batchfetch schema`: prints the JSON Schemas that describe batchfetch's files.
struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema (2020-12) of the manifest, the report or the lockfile.",
        discussion: HelpText.reflowed("""
            The same schemas are in the repository's schemas/ folder. Editors use the manifest
            schema through a first line such as:
              # yaml-language-server: $schema=./manifest.schema.json

            Examples:
              batchfetch schema manifest > manifest.schema.json
              batchfetch schema report | jq '.properties.status'
              batchfetch schema lock > lock.schema.json
            """)
    )

    enum Name: String, ExpressibleByArgument, CaseIterable {
        case manifest, report, lock
    }

    @Argument(help: "Which schema: manifest, report or lock.", completion: .list(["manifest", "report", "lock"]))
    var name: Name

    func run() {
        switch name {
        case .manifest: print(EmbeddedSchemas.manifest, terminator: "")
        case .report: print(EmbeddedSchemas.report, terminator: "")
        case .lock: print(EmbeddedSchemas.lock, terminator: "")
        }
    }
}
