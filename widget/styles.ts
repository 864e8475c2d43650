/**
 * The widget's stylesheet, applied inside its shadow root only. --accent and --on-accent are set
 * on the host element through the CSSOM (allowed under a Content-Security-Policy without
 * 'unsafe-inline', unlike a style attribute).
 */
export const STYLES = `
:host { all: initial; }
* { box-sizing: border-box; }
.root { position: fixed; bottom: 16px; z-index: 2147483000; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; }
.root.right { right: 16px; }
.root.left { left: 16px; }
button { font: inherit; cursor: pointer; }
:focus-visible { outline: 3px solid #f4b400; outline-offset: 2px; }
.launcher { position: relative; width: 56px; height: 56px; border-radius: 50%; border: 0; background: var(--accent); color: var(--on-accent); box-shadow: 0 4px 14px rgba(0,0,0,.25); display: grid; place-items: center; }
.launcher svg { width: 26px; height: 26px; fill: currentColor; }
.badge { position: absolute; top: -4px; right: -4px; min-width: 22px; height: 22px; padding: 0 6px; border-radius: 11px; background: #c5221f; color: #fff; font-size: 13px; font-weight: 700; line-height: 22px; text-align: center; }
.panel { position: absolute; bottom: 68px; width: min(370px, calc(100vw - 32px)); height: min(560px, calc(100vh - 100px)); background: #fff; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); display: flex; flex-direction: column; overflow: hidden; }
.right .panel { right: 0; }
.left .panel { left: 0; }
[hidden] { display: none !important; }
header { background: var(--accent); color: var(--on-accent); padding: 12px 14px; display: flex; align-items: center; gap: 8px; }
header h2 { flex: 1; margin: 0; font-size: 16px; font-weight: 600; overflow-wrap: anywhere; }
.close { border: 0; background: transparent; color: inherit; font-size: 22px; line-height: 1; width: 32px; height: 32px; border-radius: 6px; }
.log { flex: 1; overflow-y: auto; padding: 12px; margin: 0; list-style: none; display: flex; flex-direction: column; gap: 8px; background: #f6f7f9; }
.msg { max-width: 85%; padding: 8px 11px; border-radius: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.msg.inbound { align-self: flex-end; background: var(--accent); color: var(--on-accent); border-bottom-right-radius: 4px; }
.msg.outbound, .msg.welcome { align-self: flex-start; background: #fff; border: 1px solid #dde1e6; border-bottom-left-radius: 4px; }
.msg.pending { opacity: .7; }
.msg a { color: inherit; }
.msg img { display: block; max-width: 100%; max-height: 220px; margin-top: 6px; border-radius: 6px; }
.who { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.notice { padding: 6px 12px; margin: 0; font-size: 13px; color: #7a1c1c; background: #fdecea; }
form { border-top: 1px solid #dde1e6; padding: 8px; display: grid; gap: 6px; background: #fff; }
.about { display: grid; grid-template-columns: 1fr 1fr; gap: 6px; }
label { font-size: 12px; color: #444; display: grid; gap: 2px; }
input, textarea { font: inherit; width: 100%; padding: 7px 9px; border: 1px solid #8a9099; border-radius: 6px; color: #1a1a1a; background: #fff; }
.compose { display: flex; gap: 6px; align-items: flex-end; }
textarea { resize: none; height: 42px; max-height: 120px; }
.send { border: 0; border-radius: 6px; padding: 0 14px; height: 42px; background: var(--accent); color: var(--on-accent); font-weight: 600; }
.send:disabled { opacity: .6; cursor: default; }
@media (max-width: 400px) {
  .root { bottom: 12px; }
  .root.right { right: 12px; }
  .root.left { left: 12px; }
  .panel { width: calc(100vw - 24px); height: calc(100vh - 92px); }
  .about { grid-template-columns: 1fr; }
}
`
