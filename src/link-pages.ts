import type { Context, Next } from 'koa'

/**
 * The pages behind the links the service mails when no front end is configured (APP_URL unset):
 * the invitation page looks the invitation up by its token and accepts it, the verification page
 * redeems an e-mail verification token, and the password reset page sets a new password with a
 * reset token, each through the public API calls of docs/invitations.md and README.
 * Plain HTML and JS, labelled fields, results announced to screen readers.
 */

/** Text for an HTML page's text or a quoted attribute value. */
export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!)

/** The look of the pages with a form. */
export const FORM_STYLES = `  body { font: 16px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; }
  label { display: block; margin-top: 1rem; font-weight: 600; }
  input { display: block; width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #555; border-radius: 4px; }
  button { margin-top: 1.5rem; padding: .6rem 1.2rem; font: inherit; background: #0b57d0; color: #fff; border: 0; border-radius: 4px; cursor: pointer; }
  button:disabled { background: #777; }
  :focus-visible { outline: 3px solid #f4b400; outline-offset: 2px; }
  .error { color: #b00020; }`

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Accept your invitation</title>
<style>
${FORM_STYLES}
  .hint { color: #444; font-size: .9rem; }
</style>
</head>
<body>
<main>
  <h1>Accept your invitation</h1>
  <p id="summary">Looking up your invitation…</p>
  <form id="sign-in" hidden novalidate aria-labelledby="sign-in-title">
    <h2 id="sign-in-title">I have an account</h2>
    <p class="hint">Sign in with the password of the account of the invited address to accept.</p>
    <label for="sign_in_password">Password</label>
    <input id="sign_in_password" name="password" type="password" autocomplete="current-password" aria-describedby="sign-in-error">
    <p id="sign-in-error" class="error"></p>
    <button type="submit">Sign in and accept</button>
  </form>
  <form id="accept" hidden novalidate aria-labelledby="accept-title">
    <h2 id="accept-title">I am new here</h2>
    <p class="hint">If the invited address has no account yet, choose a password to create it. If it has one, sign in above instead.</p>
    <label for="first_name">First name</label>
    <input id="first_name" name="first_name" autocomplete="given-name">
    <label for="last_name">Last name</label>
    <input id="last_name" name="last_name" autocomplete="family-name">
    <label for="password">Password (at least 8 characters)</label>
    <input id="password" name="password" type="password" autocomplete="new-password" minlength="8" aria-describedby="password-error">
    <p id="password-error" class="error"></p>
    <button type="submit">Create my account and accept</button>
  </form>
  <p id="result" role="status" aria-live="polite"></p>
</main>
<script>
(() => {
  const token = document.body.dataset.token || new URLSearchParams(location.search).get('token') || '';
  const api = '/organizations-users-invites';
  const summary = document.getElementById('summary');
  const signIn = document.getElementById('sign-in');
  const form = document.getElementById('accept');
  const result = document.getElementById('result');
  const fail = (text) => { result.textContent = text; result.className = 'error'; };
  const call = (path, method, body, headers) =>
    fetch(path, { method, headers: Object.assign({ 'Content-Type': 'application/json', Accept: 'application/json' }, headers), body: JSON.stringify(body) })
      .then((response) => response.json().then((answer) => ({ response, answer })));
  const explain = (answer) => {
    const errors = answer.errors || {};
    return answer.message + (Object.keys(errors).length ? ': ' + Object.entries(errors).map(([field, text]) => field.replace('_', ' ') + ' ' + text).join('; ') : '');
  };
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
      signIn.hidden = false;
      form.hidden = false;
      document.getElementById('sign_in_password').focus();
    })
    .catch(() => { summary.textContent = 'The invitation could not be looked up. Try again later.'; });

  // Accepts with the given headers (a signed-in account's, or none); the answer goes to the status line.
  const acceptWith = (button, body, headers) =>
    call(api + '/' + invitation.id, 'PATCH', Object.assign({ status: 'accepted', token }, body), headers).then(({ response, answer }) => {
      if (response.ok) {
        signIn.hidden = true;
        form.hidden = true;
        result.className = '';
        result.textContent = 'Welcome! You are now a member. Log in with ' + invitation.email + ' and your password.';
        return answer;
      }
      button.disabled = false;
      fail(explain(answer));
      return answer;
    });
  const starting = (button, errorLine) => {
    errorLine.textContent = '';
    button.disabled = true;
    result.className = '';
    result.textContent = 'Accepting…';
  };
  const unreachable = (button) => () => { button.disabled = false; fail('The invitation could not be accepted. Try again later.'); };

  signIn.addEventListener('submit', (event) => {
    event.preventDefault();
    const button = signIn.querySelector('button');
    const errorLine = document.getElementById('sign-in-error');
    starting(button, errorLine);
    call('/authentication', 'POST', { strategy: 'local', email: invitation.email, password: signIn.elements.password.value })
      .then(({ response, answer }) => {
        if (!response.ok) {
          button.disabled = false;
          errorLine.textContent = response.status === 401 ? 'This password does not sign in to the account of ' + invitation.email + '.' : answer.message;
          fail(errorLine.textContent);
          return;
        }
        return acceptWith(button, {}, { Authorization: 'Bearer ' + answer.accessToken });
      })
      .catch(unreachable(button));
  });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const button = form.querySelector('button');
    const errorLine = document.getElementById('password-error');
    starting(button, errorLine);
    const body = {};
    for (const name of ['first_name', 'last_name', 'password']) {
      const value = form.elements[name].value;
      if (value) body[name] = value;
    }
    acceptWith(button, body, {})
      .then((answer) => { if (answer.errors && answer.errors.password) errorLine.textContent = 'Password ' + answer.errors.password + '.'; })
      .catch(unreachable(button));
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

const RESET_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Choose a new password</title>
<style>
${FORM_STYLES}
</style>
</head>
<body>
<main>
  <h1>Choose a new password</h1>
  <form id="reset" novalidate>
    <label for="password">New password (at least 8 characters)</label>
    <input id="password" name="password" type="password" autocomplete="new-password" minlength="8" required>
    <button type="submit">Set my password</button>
  </form>
  <p id="result" role="status" aria-live="polite"></p>
</main>
<script>
(() => {
  const token = document.body.dataset.token || new URLSearchParams(location.search).get('token') || '';
  const form = document.getElementById('reset');
  const result = document.getElementById('result');
  const button = form.querySelector('button');
  const fail = (text) => { button.disabled = false; result.className = 'error'; result.textContent = text; };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    button.disabled = true;
    result.className = '';
    result.textContent = 'Saving…';
    fetch('/users', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-Service-Method': 'reset-password' },
      body: JSON.stringify({ token, password: form.elements.password.value })
    })
      .then((response) => response.json().then((body) => ({ response, body })))
      .then(({ response, body }) => {
        if (!response.ok) {
          const errors = body.errors || {};
          return fail(errors.password ? 'Password ' + errors.password + '.' : body.message || 'This link is not valid.');
        }
        form.hidden = true;
        result.textContent = 'Your password is set. Log in with ' + body.email + ' and your new password.';
      })
      .catch(() => fail('The password could not be set. Try again later.'));
  });
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

/** Koa middleware: GET at the password reset link path answers the page that sets a new password. */
export const passwordResetPage = (linkPath: string) => linkPage(linkPath, RESET_PAGE)

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
