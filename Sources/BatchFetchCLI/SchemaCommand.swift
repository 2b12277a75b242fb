import ArgumentParser

/// `batchfetch schema`: prints the JSON Schemas that describe batchfetch's files.
struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema (2020-12) of the manifest or the report.",
        discussion: """
            The same schemas are in the repository's schemas/ folder. Editors use the manifest
            schema through a first line such as:
              # yaml-language-server: $schema=./manifest.schema.json

            Examples:
              batchfetch schema manifest > manifest.schema.json
              batchfetch schema report | jq '.properties.status'
            """
    )

    enum Name: String, ExpressibleByArgument, CaseIterable {
        case manifest, report
    }

    @Argument(help: "Which schema: manifest or report.")
    var name: Name

    func run() {
        switch name {
        case .manifest: print(EmbeddedSchemas.manifest, terminator: "")
        case .report: print(EmbeddedSchemas.report, terminator: "")
        }
    }
}
