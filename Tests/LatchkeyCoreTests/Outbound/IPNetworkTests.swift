import LatchkeyCore
import Testing

/// Networks and addresses as operators write them and as logs show them.
@Suite struct IPNetworkTests {
    @Test func addressesAndNetworksReadBackAsTheyWereWritten() throws {
        #expect(IPNetwork.format([127, 0, 0, 1]) == "127.0.0.1")
        #expect(IPNetwork.format([255, 255, 255, 255]) == "255.255.255.255")
        #expect(IPNetwork.format(Array(repeating: 0, count: 15) + [1]) == "::1")
        #expect(
            IPNetwork.format(try #require(IPNetwork.parseAddress("2001:db8::8:800:200c:417a")))
                == "2001:db8::8:800:200c:417a")
        #expect(IPNetwork.format([1, 2, 3]) == "?")
        #expect(try #require(IPNetwork("10.0.0.0/8")).description == "10.0.0.0/8")
        #expect(try #require(IPNetwork("fe80::/10")).description == "fe80::/10")
    }

    @Test func mappedAddressesAreCheckedAsTheirIPv4Form() throws {
        let mapped = try #require(IPNetwork.parseAddress("::ffff:169.254.169.254"))
        #expect(IPNetwork.unmapped(mapped) == [169, 254, 169, 254])
        #expect(IPNetwork.nonPublic.contains { $0.contains(IPNetwork.unmapped(mapped)) })
        #expect(!IPNetwork.nonPublic.contains { $0.contains([93, 184, 216, 34]) })
    }
}
