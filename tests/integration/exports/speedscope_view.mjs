// Opens a speedscope file in speedscope's own offline viewer (the npm package's dist/release/) in
// headless Chromium, through playwright-core driving /usr/bin/chromium, and reports what the page did.
// Usage: node speedscope_view.mjs VIEWER_DIR (PROFILE.speedscope.json EXPECT_TEXT SCREENSHOT.png)...
// One browser, one fresh page per profile. The viewer and the profile are served by a tiny HTTP
// server on 127.0.0.1 (the viewer fetches #profileURL=..., which file:// pages may not). Prints one
// JSON line per profile: {"profile": "...", "loaded": bool, "title": "...", "errors": [...], "found": bool,
// "importer": "Importing as ..."} (the importer is the viewer's own console line naming the format it
// recognised, e.g. "Importing as collapsed stack format" for FlameGraph's folded stacks).
// Exit status 0 when every profile loaded, showed EXPECT_TEXT and logged no console or page error.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const [viewerDir, ...rest] = process.argv.slice(2);
const jobs = [];
for (let i = 0; i + 2 < rest.length; i += 3) jobs.push({ profile: rest[i], expect: rest[i + 1], shot: rest[i + 2] });
let profilePath = '';
const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
                '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2', '.ico': 'image/x-icon' };
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
  const file = url === '/profile.json' ? profilePath : path.join(viewerDir, path.normalize(url).replace(/^([/\\])+/, ''));
  fs.readFile(file, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
    res.end(data);
  });
});
await new Promise(r => server.listen(0, '127.0.0.1', r));
const port = server.address().port;

const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mlpd-chromium-'));
let allOk = true;
let browser;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // Playwright adds --headless and a fresh --user-data-dir of its own (it refuses one in args).
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
    env: { ...process.env, TMPDIR: userDir },
    timeout: 60000,
  });
  for (const job of jobs) {
    profilePath = job.profile;
    const errors = [];
    const result = { profile: job.profile, loaded: false, title: '', errors, found: false, importer: '' };
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    page.on('console', m => {
      if (m.type() === 'error') errors.push('console: ' + m.text());
      else if (m.text().startsWith('Importing ')) result.importer = m.text();
    });
    page.on('pageerror', e => errors.push('pageerror: ' + e.message));
    page.on('requestfailed', r => errors.push('requestfailed: ' + r.url()));
    try {
      // A cache-busting query: each page fetches its own profile.
      const url = `http://127.0.0.1:${port}/profile.json?${encodeURIComponent(job.profile)}`;
      await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=${encodeURIComponent(url)}&title=mlpd-test`,
                      { waitUntil: 'load', timeout: 60000 });
      // speedscope puts the title into document.title once the profile is imported; a failed import
      // shows a message instead (e.g. "Something went wrong. Check the JS console").
      await page.waitForFunction(() => document.title.includes('mlpd-test') || /went wrong|error/i.test(document.body.innerText),
                                 null, { timeout: 60000 });
      result.loaded = (await page.title()).includes('mlpd-test');
      if (!result.loaded) errors.push('not loaded: ' + (await page.evaluate(() => document.body.innerText)).slice(0, 300));
      await page.waitForTimeout(300);
      result.title = await page.title();
      const text = await page.evaluate(() => document.body.innerText);
      // The flame chart is drawn on a canvas: frame names are not in the DOM text. The sandwich view
      // lists them in a table, so switch to it (keyboard shortcut "3") and look there.
      await page.keyboard.press('3');
      await page.waitForTimeout(500);
      const sandwich = await page.evaluate(() => document.body.innerText);
      result.found = !job.expect || text.includes(job.expect) || sandwich.includes(job.expect);
      if (job.shot) await page.screenshot({ path: job.shot });
    } catch (e) {
      errors.push('driver: ' + e.message.split('\n')[0]);
    }
    await page.close().catch(() => {});
    console.log(JSON.stringify(result));
    allOk = allOk && result.loaded && result.found && errors.length === 0;
  }
} catch (e) {
  console.log(JSON.stringify({ errors: ['driver: ' + e.message.split('\n')[0]] }));
  allOk = false;
} finally {
  if (browser) await browser.close().catch(() => {});
  server.close();
  fs.rmSync(userDir, { recursive: true, force: true });
}
process.exit(allOk && jobs.length > 0 ? 0 : 1);
