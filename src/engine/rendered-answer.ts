/**
 * Answers Postgres wrote in the API's shape (read-model.ts). A REST request's own read gets the
 * text as it is (RenderedAnswer, written by the transport's formatter without a parse and a
 * stringify); any other caller gets the parsed object.
 */
export class RenderedAnswer {
  constructor(readonly text: string) {}

  toJSON() {
    return JSON.parse(this.text)
  }
}

/** The request a transport made a call for: it may take the answer as text only for its own call (src/rest.ts). */
export interface CallOwner {
  owns(context: object): boolean
}

declare module '@feathersjs/feathers' {
  interface Params {
    restRequest?: CallOwner
  }
}
