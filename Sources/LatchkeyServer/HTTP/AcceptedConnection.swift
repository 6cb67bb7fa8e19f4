import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// How a server wraps a connection it accepted, for Hummingbird's accept loop: a connection that is never
/// served is closed when it is released, instead of taking the process down.
///
/// NIO hands accepted connections to the accept loop through an async stream. When the server's task is
/// cancelled, or its listening socket closes while a connection is being set up, the stream drops the
/// connections it still holds. A connection wrapped with `wrappingChannelSynchronously` traps when it is
/// released without being finished ("Deinited NIOAsyncWriter without calling finish()"), so one connection
/// arriving at the wrong moment crashed the service. A served connection is finished and closed by
/// `executeThenClose` whichever way it is wrapped.
public enum AcceptedConnection {
    public typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    /// Call on `channel`'s event loop, after the pipeline is set up.
    public static func wrap(_ channel: any Channel) throws -> Value {
        try wrap(channel, as: Value.self)
    }

    private static func wrap<Wrapper: ClosedWhenReleased>(_ channel: any Channel, as: Wrapper.Type) throws -> Wrapper {
        try Wrapper(synchronouslyWrapping: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
    }
}

/// NIO's initializer with teardown on release. NIO marks it deprecated in favour of the scoped
/// `executeThenClose`, which serving still uses; it is reached through this requirement so that the one
/// deliberate use does not warn.
protocol ClosedWhenReleased {
    init(synchronouslyWrapping channel: any Channel, configuration: AcceptedConnection.Value.Configuration) throws
}

extension NIOAsyncChannel: ClosedWhenReleased where Inbound == HTTPRequestPart, Outbound == HTTPResponsePart {}
