/// batchfetch's version, once: `--version`, the report's `tool.version` and the User-Agent.
public enum ToolVersion {
    public static let current = "0.1.0"
}
