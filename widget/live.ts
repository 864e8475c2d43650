import { retryDelay } from './helpers'

export interface LiveHandlers {
  /** Connected (the first time, and after every reconnection): time to read what was missed. */
  connected: () => void
  event: (name: string, data: any) => void
  /** The server refused the token (unknown, or the chat closed): no more attempts. */
  refused: (message: string) => void
  /** The page's Content-Security-Policy does not allow the WebSocket: no more attempts. */
  blocked: () => void
}

/**
 * The visitor's Socket.io connection, spoken directly over a WebSocket (Engine.IO 4, Socket.IO 5:
 * the open packet, ping/pong, the namespace connect with auth, event packets) instead of bundling
 * socket.io-client: the widget only receives events, on one namespace, without binary or acks.
 * It reconnects with backoff after any loss (a dropped network, a restarted server, a heartbeat
 * that stops), and at once when the browser says it is online again.
 */
export class Live {
  private socket?: WebSocket
  private attempt = 0
  private retryTimer?: ReturnType<typeof setTimeout>
  private heartbeat?: ReturnType<typeof setTimeout>
  private heartbeatMs = 45_000
  private stopped = false

  constructor(private readonly url: string, private readonly visitorToken: string, private readonly on: LiveHandlers) {
    addEventListener('online', this.reconnectNow)
    document.addEventListener('securitypolicyviolation', this.refusedByPolicy)
  }

  start() {
    this.open()
  }

  stop() {
    this.stopped = true
    removeEventListener('online', this.reconnectNow)
    document.removeEventListener('securitypolicyviolation', this.refusedByPolicy)
    clearTimeout(this.retryTimer)
    clearTimeout(this.heartbeat)
    this.socket?.close()
    this.socket = undefined
  }

  /** A page whose connect-src leaves the WebSocket's origin out refuses every attempt alike: stop at the first. */
  private readonly refusedByPolicy = (event: SecurityPolicyViolationEvent) => {
    if (this.stopped || !event.effectiveDirective.startsWith('connect-src')) return
    if (!event.blockedURI.startsWith(new URL(this.url).origin)) return
    this.stop()
    this.on.blocked()
  }

  private readonly reconnectNow = () => {
    if (this.stopped) return
    this.attempt = 0
    this.socket?.close()
    this.socket = undefined
    this.open()
  }

  private open() {
    clearTimeout(this.retryTimer)
    if (this.stopped) return
    let socket: WebSocket
    try {
      socket = new WebSocket(this.url)
    } catch {
      return this.retry()
    }
    this.socket = socket
    socket.onmessage = (message) => {
      if (this.socket === socket) this.receive(socket, String(message.data))
    }
    socket.onclose = () => {
      if (this.socket !== socket) return
      this.socket = undefined
      this.retry()
    }
  }

  private retry() {
    clearTimeout(this.heartbeat)
    if (this.stopped) return
    this.retryTimer = setTimeout(() => this.open(), retryDelay(this.attempt++))
  }

  /** A connection that hears no ping within the server's interval and timeout is dead: drop it. */
  private watch(socket: WebSocket) {
    clearTimeout(this.heartbeat)
    this.heartbeat = setTimeout(() => socket.close(), this.heartbeatMs)
  }

  private receive(socket: WebSocket, packet: string) {
    switch (packet[0]) {
      case '0': {
        // Engine.IO open: the heartbeat terms, then connect to the default namespace with the token.
        const open = JSON.parse(packet.slice(1))
        this.heartbeatMs = (open.pingInterval ?? 25_000) + (open.pingTimeout ?? 20_000)
        this.watch(socket)
        socket.send(`40${JSON.stringify({ visitorToken: this.visitorToken })}`)
        return
      }
      case '2':
        this.watch(socket)
        socket.send('3')
        return
      case '1':
        socket.close()
        return
      case '4':
        return this.socketPacket(socket, packet.slice(1))
    }
  }

  private socketPacket(socket: WebSocket, packet: string) {
    const body = packet.slice(1)
    switch (packet[0]) {
      case '0':
        this.attempt = 0
        this.on.connected()
        return
      case '2': {
        const start = body.indexOf('[')
        if (start < 0) return
        const [name, data] = JSON.parse(body.slice(start))
        this.on.event(name, data)
        return
      }
      case '4': {
        // connect_error: the handshake refused the token; asking again would be refused again.
        let message = 'refused'
        try {
          message = JSON.parse(body).message ?? message
        } catch {
          // a refusal without a JSON body
        }
        this.stop()
        this.on.refused(message)
        return
      }
      case '1':
        // The server ended the socket (a chat closed as it happened): the next handshake says whether it may come back.
        socket.close()
    }
  }
}
