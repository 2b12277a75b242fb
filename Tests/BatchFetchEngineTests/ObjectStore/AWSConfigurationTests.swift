@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import BatchFetchSpec
import Foundation
import Testing

/// Where `s3://` and `gs://` URLs go and with which credentials, as the AWS CLI would find them:
/// pure (files in a temporary directory, the environment given), no network.
@Suite struct AWSConfigurationTests {
    static func mirror(_ url: String, _ s3: S3Settings = S3Settings(), _ environment: [String: String] = [:]) -> MirrorURL? {
        MirrorURL(TemplatedString(literal: url), s3: s3, environment: ["HOME": "/nonexistent"].merging(environment) { $1 })
    }

    @Test func urlsByAddressingStyleAndStore() throws {
        // AWS: virtual-hosted at the region's endpoint; the key encoded as it is signed.
        let aws = try #require(Self.mirror("s3://noaa-gfs/a b/c+d.grib2", S3Settings(region: "eu-west-1")))
        #expect(aws.url.absoluteString == "https://noaa-gfs.s3.eu-west-1.amazonaws.com/a%20b/c%2Bd.grib2")
        #expect(aws.store?.key == "a b/c+d.grib2" && aws.printed == "s3://noaa-gfs/a b/c+d.grib2")
        // A custom endpoint: path style by default, unless told otherwise.
        let minio = try #require(Self.mirror("s3://models/w.bin", S3Settings(endpoint: "http://127.0.0.1:9000")))
        #expect(minio.url.absoluteString == "http://127.0.0.1:9000/models/w.bin")
        let hosted = try #require(Self.mirror("s3://models/w.bin", S3Settings(endpoint: "https://r2.example.com", pathStyle: false)))
        #expect(hosted.url.absoluteString == "https://models.r2.example.com/w.bin")
        // Google Cloud Storage's XML API, path style.
        let google = try #require(Self.mirror("gs://gcp-public-data/x/y.csv"))
        #expect(google.url.absoluteString == "https://storage.googleapis.com/gcp-public-data/x/y.csv")
        #expect(google.signer == nil)
        // The listing of a prefix.
        let prefix = try #require(Self.mirror("s3://b/dir/", S3Settings(endpoint: "http://h:1")))
        #expect(prefix.store?.listURL(continuation: "t/+=")?.absoluteString == "http://h:1/b/?list-type=2&prefix=dir%2F&continuation-token=t%2F%2B%3D")
    }

    @Test func credentialsAsTheAWSCLIFindsThem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bf-aws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let credentials = directory.appendingPathComponent("credentials")
        let config = directory.appendingPathComponent("config")
        try Data("[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = defaultsecret\n\n[team]\n# a comment\naws_access_key_id=TEAMKEY\naws_secret_access_key = team/secret+\naws_session_token = tok\n".utf8).write(to: credentials)
        try Data("[profile team]\nregion = ap-south-1\n[default]\nregion = eu-north-1\n".utf8).write(to: config)
        let files = ["AWS_SHARED_CREDENTIALS_FILE": credentials.path, "AWS_CONFIG_FILE": config.path]

        // Keys in the environment win over the default profile; the region comes from the config.
        let environment = try #require(Self.mirror("s3://b/k", S3Settings(), files.merging(["AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret"]) { $1 }))
        #expect(environment.signer?.credentials.accessKeyID == "ENVKEY" && environment.signer?.region == "eu-north-1")
        // A profile named in the manifest wins over the environment's keys, with its region and token.
        let team = try #require(Self.mirror("s3://b/k", S3Settings(profile: "team"), files.merging(["AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "x"]) { $1 }))
        #expect(team.signer?.credentials == .init(accessKeyID: "TEAMKEY", secretAccessKey: "team/secret+", sessionToken: "tok"))
        #expect(team.signer?.region == "ap-south-1" && team.url.host == "b.s3.ap-south-1.amazonaws.com")
        // AWS_PROFILE picks it too; AWS_REGION wins over the profile's region; anonymous signs nothing.
        let byVariable = try #require(Self.mirror("s3://b/k", S3Settings(), files.merging(["AWS_PROFILE": "team", "AWS_REGION": "us-west-2"]) { $1 }))
        #expect(byVariable.signer?.credentials.accessKeyID == "TEAMKEY" && byVariable.signer?.region == "us-west-2")
        #expect(Self.mirror("s3://b/k", S3Settings(anonymous: true), files)?.signer == nil)
        // No credentials anywhere: unsigned.
        #expect(Self.mirror("s3://b/k")?.signer == nil)
    }
}
