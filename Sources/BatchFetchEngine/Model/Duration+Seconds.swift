extension Duration {
    /// The duration in seconds, for the policies and reports that count in seconds as the
    /// manifest does (`timeout: 30s` is 30.0).
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
