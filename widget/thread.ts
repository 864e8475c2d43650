/** A file the team sent, as the visitor's API shows it. */
export interface ChatFile {
  file_name: string
  file_type: string
  url: string
}

/** A message as the visitor's API and socket give it. */
export interface ChatMessage {
  id: number
  conversation_id: number
  direction: 'inbound' | 'outbound'
  sender_type: string
  content: string
  content_type: string
  files: ChatFile[]
  created_at: string
}

const after = (a: ChatMessage, b: ChatMessage) => a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id)

/**
 * The visitor's thread as the widget holds it: each message once (by id), oldest first. The same
 * message reaches the widget several ways (the answer to its send, the socket, the catch-up read
 * after a reconnect): whatever way comes first adds it, the others change nothing.
 */
export class Thread {
  private readonly messages: ChatMessage[] = []

  /**
   * Adds a message not yet in the thread and says where it goes: before the message with id
   * `before`, or at the end (null). A message already there is replaced (an edit), and says so.
   */
  add(message: ChatMessage): { added: true; before: number | null } | { added: false } {
    const index = this.messages.findIndex((held) => held.id === message.id)
    if (index >= 0) {
      this.messages[index] = message
      return { added: false }
    }
    let at = this.messages.length
    while (at > 0 && after(this.messages[at - 1], message)) at--
    this.messages.splice(at, 0, message)
    return { added: true, before: this.messages[at + 1]?.id ?? null }
  }

  remove(id: number) {
    const index = this.messages.findIndex((held) => held.id === id)
    if (index >= 0) this.messages.splice(index, 1)
    return index >= 0
  }

  has(id: number) {
    return this.messages.some((held) => held.id === id)
  }

  /** The highest message id held: where a catch-up read starts (0 for an empty thread). */
  lastId() {
    return this.messages.reduce((highest, held) => Math.max(highest, held.id), 0)
  }

  get size() {
    return this.messages.length
  }
}
