/// batchfetch's version, once: `--version`, the report's `tool.version` and the User-Agent.
package enum ToolVersion {
    package static let current = "0.1.0"
}
