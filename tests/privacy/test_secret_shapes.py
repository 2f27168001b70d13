"""Secrets of every common shape are masked wherever coop writes text (issue 27): detect-secrets' detector patterns,
coop's own shapes for providers it lacks, random tokens next to a key word, passwords in URLs and connection
strings, and every URL in a log line. Each key below is made up; each is built from parts so that no scanner takes
this file for a leak."""

from __future__ import annotations

import logging

import pytest

from coop.privacy.secrets import MARKER, mask, mask_urls

R40 = "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9jKl1n"
HEX32 = "3f9a7c1e5b2d4f6a8c0e1b3d5f7a9c2e"

# (what it is, the secret, the text it sits in: "{}" is the secret)
SHAPES = [
    ("OpenAI", "sk-" + "proj-" + R40, "key {}"),
    ("Anthropic", "sk-" + "ant-api03-" + R40, "{}"),
    ("OpenRouter", "sk-" + "or-v1-" + HEX32 + HEX32, "use {} please"),
    ("Perplexity", "pplx-" + R40 + "Qx7", "my perplexity one: {}"),
    ("Replicate", "r8_" + R40[:37], "REPLICATE_API_TOKEN={}"),
    ("Groq", "gsk_" + R40 + "Zz12Yy34", "{}"),
    ("Hugging Face", "hf_" + R40[:34], "hub {}"),
    ("xAI", "xai-" + R40 + "Q1w2E3r4", "{}"),
    ("Google", "AIza" + "SyD-" + R40[:31], "maps {}"),
    ("AWS access key id", "AKIA" + "QX7Z3M2K9P4R8T6W", "{}"),
    ("AWS secret access key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY", "aws_secret_access_key = {}"),
    ("AWS secret in prose", "u8Kd/3nQ+Lx9Pz2Wv7Rt5Ys1Bc4Ne6Mh0Jg8Fa2D", "my AWS secret access key is {}"),
    ("Azure (32 hex next to a key word)", HEX32, "Azure OpenAI key: {}"),
    ("Mistral (32 characters next to a key word)", "Xq7vP2mK9sL4tR8wN3zB6cJ1hF5dG0aY", "the mistral api key is {} ok"),
    ("GitLab", "glpat-" + "xY3_z9Kq2LmN8pR4tV6w", "{}"),
    ("GitHub classic", "ghp_" + R40[:36], "{}"),
    ("GitHub fine-grained", "github_pat_" + "11ABCDEFG0" + R40 + "_" + R40, "{}"),
    ("Slack bot", "xoxb-" + "2493201843-5820139475-Zq8LmN3bV7cX1pR4tY6uW9aS", "{}"),
    ("Slack webhook", "https://hooks.slack.com/services/" + "T0A1B2C3D/B4E5F6G7H/" + R40[:24], "post to {}"),
    ("Stripe live", "sk_" + "live_" + R40[:24], "{}"),
    ("Stripe restricted", "rk_" + "live_" + R40[:24], "{}"),
    ("SendGrid", "SG." + R40[:22] + "." + R40 + "Zz9", "{}"),
    ("Twilio", "SK" + HEX32, "{}"),
    ("JWT", "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "session cookie {}"),
    ("npm", "npm_" + R40[:36], "//registry.npmjs.org/:_authToken={}"),
    ("Telegram bot", "123456789" + ":" + "AAH" + R40[:32], "bot {}"),
    ("Discord bot", "MTA" + R40[:21] + ".Gh7K2a." + R40[:27], "{}"),
    ("Mailchimp", HEX32 + "-us14", "{}"),
    ("Bearer token", "0123456789abcdefABCDEF", "Authorization: Bearer {}"),
    ("private key block", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7" + R40 + "\n" + R40 +
     "\n-----END RSA PRIVATE KEY-----", "here it is:\n{}\nthanks"),
    ("OpenSSH private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" + R40 +
     "\n-----END OPENSSH PRIVATE KEY-----", "{}"),
    ("Postgres URL password", "Sup3r-s3cret", "postgresql://app:{}@db.internal:5432/prod"),
    ("MongoDB URL password", "p4ssW0rd42", "mongodb+srv://admin:{}@cluster0.example.net/test"),
    ("ADO.NET connection string", "hunter2!", "Server=tcp:db;User ID=sa;Password={};Encrypt=true"),
    ("a password said in a chat", "Tr0ub4dor&3x", "my wifi password is {}."),
    ("api key in a URL", "9d8c7b6a5f4e3d2c", "https://x.openai.azure.com/openai?api-version=2024-06-01&api-key={}"),
]


def test_at_least_25_shapes_are_covered():
    assert len(SHAPES) >= 25


@pytest.mark.parametrize(("what", "secret", "template"), SHAPES, ids=[s[0] for s in SHAPES])
def test_each_shape_is_masked_in_its_context(what, secret, template):
    text = template.format(secret)
    masked = mask(text)
    assert secret not in masked, what
    # no long piece of it survives either (a key cut in two is still a leak)
    assert not any(secret[i:i + 12] in masked for i in range(0, max(1, len(secret) - 12))), (what, masked)
    assert MARKER in masked
    assert mask(masked) == masked  # masking twice changes nothing


@pytest.mark.parametrize("text", [
    "the key is task-force-2024-quarterly-review-notes", "my password is long", "password: see the manager",
    "the token of my appreciation 2024-11-23T10:00:00Z", "key points: apples, oranges and pears",
    "I keep my passwords in a password manager", "secret santa 2024 at 19:30 in room 12",
    "https://example.com/search?q=hello", "postgres://localhost:5432/app", "key = f12", "ABCDEFGHIJKLMNOPQRSTUVWX",
    "The primary key of the table is (user_id, external_id).",
    "error: OPENAI_API_KEY is not set; openai/gpt-4o-mini needs it", "key model: meta-llama/Llama-3.1-8B-Instruct",
])
def test_ordinary_text_near_key_words_is_left_alone(text):
    assert mask(text) == text


def test_every_url_in_a_log_line_keeps_only_its_host_and_path(tmp_path):
    from coop.files.logs import logging_to_file

    url = "https://me.openai.azure.com/openai/deployments/gpt?api-version=2024-06-01&api-key=abc123def456"
    assert mask_urls(f"POST {url} failed") == \
        "POST https://me.openai.azure.com/openai/deployments/gpt?api-version=[secret]&api-key=[secret] failed"
    with logging_to_file(tmp_path) as path:
        logging.getLogger("coop.test").warning("provider error at %s: 401; also https://u:pw99@h.example/x?t=1", url)
    assert path is not None
    written = path.read_text()
    assert "abc123def456" not in written and "pw99" not in written and "t=1" not in written
    assert "https://me.openai.azure.com/openai/deployments/gpt?" in written
