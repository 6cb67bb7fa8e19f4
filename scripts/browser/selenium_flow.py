"""The user's and the administrator's pages in headless Chromium, driven by selenium (PyPI), against a
running platform: a new user signs up, the demo user signs in (prompt=login), each approves the test app
on the consent page once (the SSO that follows passes on the remembered consent), an administrator signs in
on the admin page and revokes an instance with a reason. Every page is captured at 1280 and 390 px;
any SEVERE browser console entry (CSP violations are reported there) fails the run.

Usage: selenium_flow.py --issuer URL --gateway URL --credentials demo-credentials.json
                        --admin-token TOKEN --screenshots DIR
Exit status 0 when every check passed; the failures are printed otherwise.
"""
import argparse
import base64
import hashlib
import http.server
import json
import os
import secrets
import struct
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

WIDTHS = (1280, 390)


class Callback(http.server.BaseHTTPRequestHandler):
    """The app's loopback redirect URI (RFC 8252 §7.3): records each query it receives."""
    queries = []

    def do_GET(self):
        target = urllib.parse.urlsplit(self.path)
        if target.path != "/cb":  # the browser's favicon request: no content, and no console error
            self.send_response(204)
            self.end_headers()
            return
        Callback.queries.append(dict(urllib.parse.parse_qsl(target.query)))
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"<!doctype html><title>App</title><p>Back in the app.</p>")

    def log_message(self, *args):
        pass


def request(method, url, body=None, headers=None, form=False):
    headers = dict(headers or {})
    data = None
    if body is not None:
        if form:
            data = urllib.parse.urlencode(body).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers, method=method)) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text else {}
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, {"raw": text}


class Flow:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.credentials = json.load(open(args.credentials))
        self.admin = {"Authorization": f"Bearer {args.admin_token}"}
        os.makedirs(args.screenshots, exist_ok=True)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Callback)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.redirect_uri = f"http://127.0.0.1:{self.server.server_address[1]}/cb"
        status, client = request("POST", f"{args.gateway}/admin/tenants/demo/clients", {
            "client_name": "Selenium test app", "application_type": "native", "redirect_uris": [self.redirect_uri],
            "token_endpoint_auth_method": "none", "grant_types": ["authorization_code"], "response_types": ["code"],
            "scope": "openid"}, self.admin)
        self.check(status == 201, f"create the loopback client: {status} {client}")
        self.client_id = client.get("client_id", "")
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
        self.wait = WebDriverWait(self.driver, 20)

    def check(self, condition, message):
        if not condition:
            self.failures.append(message)
            print(f"FAIL {message}", flush=True)
        return condition

    def console_is_clean(self, page):
        severe = [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]
        self.check(not severe, f"{page}: console errors (CSP violations included): {severe}")

    def capture(self, name):
        """Screenshots of the current page at each width, checked to be PNGs of that width."""
        for width in WIDTHS:
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": 900 if width > 500 else 844, "deviceScaleFactor": 1, "mobile": width < 500})
            png = self.driver.get_screenshot_as_png()
            path = os.path.join(self.args.screenshots, f"{name}-{width}.png")
            with open(path, "wb") as file:
                file.write(png)
            ok = png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", png[16:20])[0] == width
            self.check(ok, f"{name}: screenshot at {width} px")
        self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        self.console_is_clean(name)

    def wait_for_title(self, title):
        try:
            self.wait.until(lambda driver: driver.title.startswith(title) or title in driver.title)
            return True
        except Exception:
            return self.check(False, f"expected the page '{title}', got '{self.driver.title}' at {self.driver.current_url}")

    def wait_for_callback(self, count):
        try:
            self.wait.until(lambda _: len(Callback.queries) >= count)
            return Callback.queries[count - 1]
        except Exception:
            self.check(False, f"no callback #{count} (page '{self.driver.title}' at {self.driver.current_url})")
            return {}

    def authorize(self, state, verifier, extra=()):
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = [("response_type", "code"), ("client_id", self.client_id), ("redirect_uri", self.redirect_uri),
                 ("scope", "openid"), ("state", state), ("code_challenge", challenge), ("code_challenge_method", "S256")]
        self.driver.get(f"{self.args.issuer}/authorize?" + urllib.parse.urlencode(list(query) + list(extra)))

    def redeem(self, query, state, verifier, what):
        self.check(query.get("state") == state, f"{what}: state comes back unchanged ({query})")
        self.check(query.get("iss") == self.args.issuer, f"{what}: iss in the response (RFC 9207)")
        status, tokens = request("POST", f"{self.args.issuer}/token", {
            "grant_type": "authorization_code", "code": query.get("code", ""), "redirect_uri": self.redirect_uri,
            "client_id": self.client_id, "code_verifier": verifier}, form=True)
        self.check(status == 200 and "access_token" in tokens, f"{what}: the code buys tokens ({status} {tokens})")

    def allow_consent(self, name):
        """The loopback client is not first-party: a user approves it once on the consent page."""
        if not self.wait_for_title("Allow access"):
            return
        self.capture(name)
        client = self.driver.find_element(By.CSS_SELECTOR, ".client").text
        self.check(client == "Selenium test app", f"{name}: the consent page names the client ({client!r})")
        self.driver.find_element(By.CSS_SELECTOR, "button[value=allow]").click()

    def sign_up(self):
        state, verifier = "signup-" + secrets.token_hex(8), secrets.token_urlsafe(48)
        self.authorize(state, verifier)
        if not self.wait_for_title("Sign in"):
            return
        self.capture("selenium-sign-in")
        self.driver.find_element(By.CSS_SELECTOR, "a[href*='/signup?']").click()
        if not self.wait_for_title("Create an account"):
            return
        self.capture("selenium-sign-up")
        username = "selenium-" + secrets.token_hex(4)
        self.driver.find_element(By.ID, "username").send_keys(username)
        self.driver.find_element(By.ID, "email").send_keys(f"{username}@example.com")
        self.driver.find_element(By.ID, "password").send_keys("Selenium pass 4 " + secrets.token_hex(8))
        self.driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        self.allow_consent("selenium-consent")
        self.redeem(self.wait_for_callback(1), state, verifier, "sign-up")

    def sign_in(self):
        """prompt=login shows the page although the sign-up left an SSO session; the keyboard submits it."""
        state, verifier = "signin-" + secrets.token_hex(8), secrets.token_urlsafe(48)
        self.authorize(state, verifier, [("prompt", "login")])
        if not self.wait_for_title("Sign in"):
            return
        self.driver.find_element(By.ID, "username").send_keys(self.credentials["username"])
        self.driver.find_element(By.ID, "password").send_keys(self.credentials["password"] + Keys.ENTER)
        self.allow_consent("selenium-consent-demo-user")
        self.redeem(self.wait_for_callback(2), state, verifier, "sign-in")
        state, verifier = "sso-" + secrets.token_hex(8), secrets.token_urlsafe(48)
        self.authorize(state, verifier)
        self.redeem(self.wait_for_callback(3), state, verifier, "SSO with the remembered consent")

    def admin_revokes_an_instance(self):
        status, iat = request("POST", f"{self.args.gateway}/admin/tenants/demo/initial-access-tokens",
                              {"uses": 1, "expires_in": 600}, self.admin)
        self.check(status == 201, f"mint an initial access token: {status}")
        status, instance = request("POST", f"{self.args.gateway}/t/demo/register", {
            "client_name": "Selenium stolen phone", "redirect_uris": ["com.example.selenium:/cb"],
            "token_endpoint_auth_method": "none"}, {"Authorization": f"Bearer {iat.get('initial_access_token', '')}"})
        if not self.check(status == 201, f"register an instance: {status} {instance}"):
            return
        client_id = instance["client_id"]
        page = f"{self.args.gateway}/admin/t/demo"
        self.driver.get(page)
        if not self.wait_for_title("Sign in"):
            return
        self.capture("selenium-admin-sign-in")
        self.driver.find_element(By.ID, "client_id").send_keys(self.credentials["adminClientID"])
        self.driver.find_element(By.ID, "client_secret").send_keys(self.credentials["adminClientSecret"] + Keys.ENTER)
        if not self.wait_for_title("Instances"):
            return
        self.capture("selenium-admin-instances")
        reason = self.driver.find_element(By.CSS_SELECTOR, f"form[action$='/clients/{client_id}/revoke'] input[name=reason]")
        reason.send_keys("device stolen (selenium)" + Keys.ENTER)
        try:
            self.wait.until(lambda driver: driver.execute_script(
                "const f = document.querySelector('.flash'); return f ? f.textContent : ''") == f"Instance {client_id} revoked.")
        except Exception:
            self.check(False, "the admin page confirms the revocation")
        self.capture("selenium-admin-after-revoke")
        status, _ = request("GET", f"{self.args.gateway}/t/demo/register/{client_id}",
                            headers={"Authorization": f"Bearer {instance['registration_access_token']}"})
        self.check(status == 401, f"RFC 7592 read of the revoked instance is refused ({status})")
        status, stored = request("GET", f"{self.args.gateway}/admin/tenants/demo/clients/{client_id}", headers=self.admin)
        self.check(status == 200 and stored.get("status") == "revoked", f"the admin API shows it revoked: {stored}")

    def run(self):
        try:
            for step in (self.sign_up, self.sign_in, self.admin_revokes_an_instance):
                try:
                    step()
                except Exception as error:  # a missing element or a browser failure is a failed check
                    self.check(False, f"{step.__name__}: {type(error).__name__}: {error}")
        finally:
            self.driver.quit()
            self.server.shutdown()
        return not self.failures


def main():
    parser = argparse.ArgumentParser()
    for name in ("--issuer", "--gateway", "--credentials", "--admin-token", "--screenshots"):
        parser.add_argument(name, required=True)
    flow = Flow(parser.parse_args())
    ok = flow.run()
    print("selenium: every page passed" if ok else f"selenium: {len(flow.failures)} check(s) failed", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
