// The commit of a release build: scripts/dist.sh replaces this line for `make dist` and restores
// it afterwards (ToolVersion.commit). Keep it one line.
let buildCommit: String? = nil
