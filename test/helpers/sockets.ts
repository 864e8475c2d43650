import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { io } from 'socket.io-client'
import type { Socket } from 'socket.io-client'
import type { TestApp } from './app.js'

export interface Received {
  event: string
  data: any
}

/** A connected socket: every event it receives, in order, and a promise settled when the server ends it. */
export interface Listener {
  socket: Socket
  received: Received[]
  cutOff: Promise<void>
}

/** The app's Socket.io on a loopback port, as serveSockets gives it. */
export interface SocketServer {
  url: string
  listen(auth: Record<string, string>, extraHeaders?: Record<string, string>): Promise<Listener>
  close(): Promise<void>
}

/**
 * The app in-process on a loopback port with its Socket.io attached. listen() connects a socket
 * with handshake credentials ({apiKey}, {accessToken}, {visitorToken}) and, if given, handshake
 * headers, and rejects with the server's refusal; close() disconnects every socket it made and
 * stops the server.
 */
export async function serveSockets(t: TestApp): Promise<SocketServer> {
  const server = http.createServer(t.app.callback())
  ;(t.app as any).io.attach(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const sockets: Socket[] = []

  async function listen(auth: Record<string, string>, extraHeaders: Record<string, string> = {}): Promise<Listener> {
    const socket = io(url, { auth, extraHeaders, transports: ['websocket'], forceNew: true, reconnection: false })
    sockets.push(socket)
    const received: Received[] = []
    socket.onAny((event: string, data: any) => received.push({ event, data }))
    await new Promise<void>((resolve, reject) => {
      socket.on('connect', () => resolve())
      socket.on('connect_error', reject)
    })
    const cutOff = new Promise<void>((resolve) => socket.on('disconnect', () => resolve()))
    return { socket, received, cutOff }
  }

  async function close() {
    for (const socket of sockets) socket.disconnect()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }

  return { url, listen, close }
}

/** The events a listener heard of a service (path), of one kind if given ('created', 'patched'...). */
export const heard = (listener: Listener, path: string, event?: string) =>
  listener.received.filter((r) => r.event.startsWith(`${path} `) && (!event || r.event === `${path} ${event}`))

/** The ids of the records of those events. */
export const ids = (listener: Listener, path: string, event?: string) => heard(listener, path, event).map((r) => r.data.id as number)
