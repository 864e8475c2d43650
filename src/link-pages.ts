import type { Context, Next } from 'koa'

/**
 * The pages behind the links the service mails when no front end is configured (APP_URL unset):
 * the invitation page looks the invitation up by its token and accepts it, the verification page
 * redeems an e-mail verification token, both through the public API calls of docs/invitations.md.
 * Plain HTML and JS, labelled fields, results announced to screen readers.
 */

/** Text for an HTML page's text or a quoted attribute value. */
export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!)

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Accept your invitation</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; }
  label { display: block; margin-top: 1rem; font-weight: 600; }
  input { display: block; width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #555; border-radius: 4px; }
  button { margin-top: 1.5rem; padding: .6rem 1.2rem; font: inherit; background: #0b57d0; color: #fff; border: 0; border-radius: 4px; cursor: pointer; }
  button:disabled { background: #777; }
  :focus-visible { outline: 3px solid #f4b400; outline-offset: 2px; }
  .error { color: #b00020; }
  .hint { color: #444; font-size: .9rem; }
</style>
</head>
<body>
<main>
  <h1>Accept your invitation</h1>
  <p id="summary">Looking up your invitation…</p>
  <form id="accept" hidden novalidate>
    <p class="hint">If you already have an account with this e-mail address, enter its password; otherwise choose one for your new account.</p>
    <label for="first_name">First name</label>
    <input id="first_name" name="first_name" autocomplete="given-name">
    <label for="last_name">Last name</label>
    <input id="last_name" name="last_name" autocomplete="family-name">
    <label for="password">Password (at least 8 characters)</label>
    <input id="password" name="password" type="password" autocomplete="new-password" minlength="8" aria-describedby="password-error">
    <p id="password-error" class="error"></p>
    <button type="submit">Accept</button>
  </form>
  <p id="result" role="status" aria-live="polite"></p>
</main>
<script>
(() => {
  const token = document.body.dataset.token || new URLSearchParams(location.search).get('token') || '';
  const api = '/organizations-users-invites';
  const summary = document.getElementById('summary');
  const form = document.getElementById('accept');
  const result = document.getElementById('result');
  const fail = (text) => { result.textContent = text; result.className = 'error'; };
  let invitation;

  fetch(api + '?token=' + encodeURIComponent(token), { headers: { Accept: 'application/json' } })
    .then((response) => response.json().then((body) => ({ response, body })))
    .then(({ response, body }) => {
      invitation = response.ok && body.data && body.data[0];
      if (!invitation) { summary.textContent = 'This invitation link is not valid, or the invitation was withdrawn.'; return; }
      const inviter = invitation.created_by_user ? ' by ' + [invitation.created_by_user.first_name, invitation.created_by_user.last_name].filter(Boolean).join(' ') : '';
      const org = invitation.organization ? invitation.organization.name : 'an organization';
      if (invitation.status !== 'pending') {
        summary.textContent = 'This invitation to ' + org + ' is ' + invitation.status + ' and can no longer be accepted.';
        return;
      }
      summary.textContent = invitation.email + ' is invited' + inviter + ' to join ' + org + ' as ' + invitation.role + '.';
      form.hidden = false;
      document.getElementById('first_name').focus();
    })
    .catch(() => { summary.textContent = 'The invitation could not be looked up. Try again later.'; });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const button = form.querySelector('button');
    const body = { status: 'accepted', token };
    for (const name of ['first_name', 'last_name', 'password']) {
      const value = form.elements[name].value;
      if (value) body[name] = value;
    }
    document.getElementById('password-error').textContent = '';
    button.disabled = true;
    result.className = '';
    result.textContent = 'Accepting…';
    fetch(api + '/' + invitation.id, { method: 'PATCH', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(body) })
      .then((response) => response.json().then((answer) => ({ response, answer })))
      .then(({ response, answer }) => {
        if (response.ok) {
          form.hidden = true;
          result.textContent = 'Welcome! You are now a member. Log in with ' + invitation.email + ' and your password.';
          return;
        }
        button.disabled = false;
        const errors = answer.errors || {};
        if (errors.password) document.getElementById('password-error').textContent = 'Password ' + errors.password + '.';
        fail(answer.message + (Object.keys(errors).length ? ': ' + Object.entries(errors).map(([field, text]) => field.replace('_', ' ') + ' ' + text).join('; ') : ''));
      })
      .catch(() => { button.disabled = false; fail('The invitation could not be accepted. Try again later.'); });
  });
})();
</script>
</body>
</html>`

const VERIFY_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Confirm your e-mail address</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; }
  .error { color: #b00020; }
</style>
</head>
<body>
<main>
  <h1>Confirm your e-mail address</h1>
  <p id="result" role="status" aria-live="polite">Confirming…</p>
</main>
<script>
(() => {
  const token = document.body.dataset.token || new URLSearchParams(location.search).get('token') || '';
  const result = document.getElementById('result');
  fetch('/users', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-Service-Method': 'verifyEmail' },
    body: JSON.stringify({ token })
  })
    .then((response) => response.json().then((body) => ({ response, body })))
    .then(({ response, body }) => {
      if (response.ok) { result.textContent = body.email + ' is confirmed. You can close this page.'; return; }
      result.className = 'error';
      result.textContent = body.message || 'This link is not valid.';
    })
    .catch(() => { result.className = 'error'; result.textContent = 'The address could not be confirmed. Try again later.'; });
})();
</script>
</body>
</html>`

/** Where the link lands: the path of INVITE_LINK_PATH, with {token} standing for a path segment. */
const linkPattern = (linkPath: string) => {
  const path = (linkPath.startsWith('/') ? linkPath : `/${linkPath}`).split('?')[0]
  const source = path.split('{token}').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('([^/]+)')
  return new RegExp(`^${source}$`)
}

/** Koa middleware: GET at the invitation link path answers the acceptance page. */
export const invitationPage = (linkPath: string) => linkPage(linkPath, PAGE)

/** Koa middleware: GET at the verification link path answers the page that confirms the address. */
export const verificationPage = (linkPath: string) => linkPage(linkPath, VERIFY_PAGE)

/** A page served at a mailed link's path, with the link's token in the page. */
function linkPage(linkPath: string, page: string) {
  const pattern = linkPattern(linkPath)
  return (ctx: Context, next: Next) => {
    const match = ctx.method === 'GET' ? pattern.exec(ctx.path) : null
    if (!match) return next()
    let token = ''
    try {
      token = match[1] ? decodeURIComponent(match[1]) : ''
    } catch {
      // a malformed link: the page says the invitation is not valid
    }
    ctx.type = 'text/html; charset=utf-8'
    ctx.set('Cache-Control', 'no-store')
    ctx.set('Referrer-Policy', 'no-referrer')
    ctx.body = page.replace('<body>', `<body data-token="${escapeHtml(token)}">`)
  }
}
