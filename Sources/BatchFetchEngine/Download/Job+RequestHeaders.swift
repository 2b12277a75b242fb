import BatchFetchSpec

extension Job {
    /// The headers every request of this job sends: its own (environment values resolved), and
    /// batchfetch's User-Agent unless the job sets one.
    var requestHeaders: [(name: String, value: String)] {
        var headers = self.headers.map { (name: $0.name, value: $0.value.resolved) }
        if !headers.contains(where: { $0.name.lowercased() == "user-agent" }) {
            headers.append((name: "User-Agent", value: "batchfetch/\(Runner.version)"))
        }
        return headers
    }
}
