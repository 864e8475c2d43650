import type { Context, Next } from 'koa'
import type { Application } from '../../declarations.js'
import { limitPerAddress } from '../../rate-limit/per-address.js'
import { FORM_STYLES } from '../../link-pages.js'

/**
 * GET /public/booking-links/<slug>/page: a page a person books with, on the public booking calls
 * of docs/reservations.md (the link's services, a day's free times, the booking). The JSON of
 * /public/booking-links/<slug> is for the booking pages organizations build themselves; this
 * one lets a link be tried, or shared, as it is. Plain HTML and JS, labelled fields, results
 * announced to screen readers, times shown in the service's time zone.
 */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Book an appointment</title>
<style>
${FORM_STYLES}
  select { display: block; width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #555; border-radius: 4px; }
  #slots button { margin: .5rem .5rem 0 0; }
  #slots button[aria-pressed="true"] { background: #063b8f; outline: 3px solid #f4b400; }
</style>
</head>
<body>
<main>
  <h1 id="title">Book an appointment</h1>
  <p id="description"></p>
  <form id="when" hidden>
    <label for="service">Service</label>
    <select id="service" name="service"></select>
    <label for="date">Day</label>
    <input id="date" name="date" type="date" required>
  </form>
  <section id="times" aria-labelledby="times-title" hidden>
    <h2 id="times-title">Free times</h2>
    <div id="slots"></div>
  </section>
  <form id="book" hidden novalidate>
    <h2>Your details</h2>
    <label for="first_name">First name</label>
    <input id="first_name" name="first_name" autocomplete="given-name" required>
    <label for="last_name">Last name</label>
    <input id="last_name" name="last_name" autocomplete="family-name">
    <label for="email">E-mail</label>
    <input id="email" name="email" type="email" autocomplete="email" required>
    <button type="submit">Book</button>
  </form>
  <p id="result" role="status" aria-live="polite">Loading…</p>
</main>
<script>
(() => {
  const slug = decodeURIComponent(location.pathname.split('/')[3] || '');
  const api = '/public/booking-links/' + encodeURIComponent(slug);
  const $ = (id) => document.getElementById(id);
  const result = $('result');
  const say = (text, isError) => { result.textContent = text; result.className = isError ? 'error' : ''; };
  const getJson = (url, options) => fetch(url, options).then((response) => response.json().then((body) => ({ response, body })));
  let services = [];
  let chosen;

  const service = () => services.find((s) => String(s.id) === $('service').value);
  const timeOf = (iso) => new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', timeZone: service().timezone }).format(new Date(iso));

  function showTimes() {
    chosen = undefined;
    $('book').hidden = true;
    if (!$('date').value) return;
    say('Looking for free times…');
    getJson(api + '/slots?service_id=' + service().id + '&date=' + $('date').value).then(({ response, body }) => {
      const slots = $('slots');
      slots.textContent = '';
      $('times').hidden = false;
      if (!response.ok) return say(body.message, true);
      for (const slot of body.data) {
        const button = document.createElement('button');
        button.type = 'button';
        button.textContent = timeOf(slot.start_datetime);
        button.setAttribute('aria-pressed', 'false');
        button.addEventListener('click', () => {
          for (const other of slots.children) other.setAttribute('aria-pressed', 'false');
          button.setAttribute('aria-pressed', 'true');
          chosen = slot;
          $('book').hidden = false;
          say('');
          $('first_name').focus();
        });
        slots.appendChild(button);
      }
      say(body.data.length ? body.data.length + ' free times on ' + $('date').value + ' (' + service().timezone + ').' : 'No free times on that day: try another.');
    }).catch(() => say('The free times could not be loaded. Try again later.', true));
  }

  getJson(api).then(({ response, body }) => {
    if (!response.ok) return say('This booking link is not valid.', true);
    const config = body.page_config || {};
    document.title = $('title').textContent = config.title || body.name;
    $('description').textContent = config.description || config.welcome_message || '';
    services = body.services;
    for (const s of services) $('service').add(new Option(s.name + ' (' + s.duration_minutes + ' min)', s.id));
    $('date').value = new Date().toISOString().slice(0, 10);
    $('when').hidden = false;
    $('service').addEventListener('change', showTimes);
    $('date').addEventListener('change', showTimes);
    showTimes();
  }).catch(() => say('The booking page could not be loaded. Try again later.', true));

  $('book').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = event.target;
    const contact = { first_name: form.elements.first_name.value, email: form.elements.email.value };
    if (form.elements.last_name.value) contact.last_name = form.elements.last_name.value;
    say('Booking…');
    getJson(api + '/reservations', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ service_id: service().id, start_datetime: chosen.start_datetime, contact })
    }).then(({ response, body }) => {
      if (!response.ok) {
        const errors = body.errors || {};
        const fields = Object.entries(errors).map(([field, text]) => field.split('.').pop().replace('_', ' ') + ' ' + text);
        return say(body.message + (fields.length ? ': ' + fields.join('; ') : ''), true);
      }
      form.hidden = true;
      $('when').hidden = true;
      $('times').hidden = true;
      say('Booked: ' + service().name + ' on ' + $('date').value + ' at ' + timeOf(body.reservation.start_datetime) + '. See you then!');
    }).catch(() => say('The booking could not be made. Try again later.', true));
  });
})();
</script>
</body>
</html>`

const PAGE_PATH = /^\/public\/booking-links\/([a-z0-9]+(?:-[a-z0-9]+)*)\/page$/

/** Koa middleware: GET /public/booking-links/<slug>/page answers the booking page (its calls say whether the link exists). */
export const bookingPage = (app: Application) => {
  const limit = limitPerAddress(app)
  return (ctx: Context, next: Next) => {
    if (ctx.method !== 'GET' || !PAGE_PATH.test(ctx.path)) return next()
    return limit(ctx, async () => {
      ctx.type = 'text/html; charset=utf-8'
      ctx.set('Cache-Control', 'no-cache')
      ctx.set('Referrer-Policy', 'same-origin')
      ctx.set('X-Content-Type-Options', 'nosniff')
      ctx.body = PAGE
    })
  }
}
