"""Provider tokens by their documented shapes (docs/security.md, Redaction, rule 1 and 3): each
marker is a documented prefix with the provider's alphabet and length, found at the start of
every token run, after each ``-``/``_`` inside one (``key-AKIA…``, ``token_ghp_…``), after a
JSON escape, a URL-encoded separator or an ANSI colour; anchors that end in ``.`` and markers
whose alphabet leaves the token class (``+ / = . ~``) are read from wider runs; context markers
(webhook URLs, Telegram bot tokens, Facebook app tokens, Azure AD client secrets, OpenShift
tokens, private-key PEM headers) by the byte before a run or a memchr of a rare byte. A marker
needs a token-shaped tail after its prefix, so prose that merely names a provider stays clean.

Sources: each provider's documentation of its token format; the gitleaks rule set
(``config/gitleaks.toml``, MIT) and detect-secrets for the prefixes."""
from __future__ import annotations

import re

from lib.redact.outcome import _P
from lib.redact.scan import _ALNUM, _bounded, _finds, _Lazy, _mixed, _run_rx, _Scan, _table
from lib.redact.keyed import _KEYED_MIN_RUN, _OPERATOR_NEAR, _PROVIDER_SEEN, _provider_keyed, _VALUE_OPENERS


_TOKEN_CLS = _table({_ALNUM + "_-": ord("a")}, ord(" "))   # provider-token runs


# 1. Secret markers. (anchor, rule, regex matched at the anchor, needs a mixed tail).
# A marker is tried only at the start of a token run of >= 20 [A-Za-z0-9_-] characters (or the
# character after a JSON escape), so a prefix inside a word ("task-", "disk-") never fires.
# Sources: each provider's documentation of its token format; gitleaks / detect-secrets rule
# sets for the prefixes; docs/security.md, Redaction for the rule names it defines.

_B64U = rb"[A-Za-z0-9_-]"
_END = rb"(?![A-Za-z0-9_-])"
_END_ALNUM = rb"(?![A-Za-z0-9])"
"""End of an AWS key id: no letter or digit follows; a ``-`` or ``_`` may (Claude Code's project
folder spells a cwd's ``/`` as ``-``: ``-tmp-AKIA…-x``)."""

# The last field asks for a token-shaped tail (_mixed: letters and digits, or both cases). Every
# provider tail below is random base62/base64/hex, so it always is; "sk-ant-admin01-your_token"
# is not. AWS key ids (base32, 16 chars: 3.6 % have no digit) and age keys skip the check.
_START_MARKERS = [
    # Anthropic: sk-ant-api03-<93>AA, admin keys sk-ant-admin01-<93>AA (console docs).
    (b"sk-ant-admin01-", "anthropic_admin_key", rb"sk-ant-admin01-" + _B64U + rb"{20,}", True),
    (b"sk-ant-", "anthropic_key", rb"sk-ant-(?:[a-z]{2,8}\d\d-)?+(" + _B64U + rb"{20,})", True),
    # OpenAI project / service-account / admin keys: sk-proj-<156>, sk-svcacct-..., sk-admin-...
    (b"sk-proj-", "openai_project_key", rb"sk-proj-" + _B64U + rb"{20,}", True),
    (b"sk-svcacct-", "openai_project_key", rb"sk-svcacct-" + _B64U + rb"{20,}", True),
    (b"sk-admin-", "openai_project_key", rb"sk-admin-" + _B64U + rb"{20,}", True),
    (b"sk-None-", "openai_project_key", rb"sk-None-" + _B64U + rb"{20,}", True),
    (b"sk-or-v1-", "openrouter_key", rb"sk-or-v1-[0-9a-f]{64}", True),
    # Legacy OpenAI sk-<48 alnum>, DeepSeek sk-<32 hex>, other sk- keys (reference: sk-).
    (b"sk-", "anthropic_or_openai_key", rb"sk-[A-Za-z0-9]{20,}" + _END, True),
    (b"sk_live_", "stripe_live_key", rb"sk_live_[A-Za-z0-9]{10,}", True),
    (b"sk_prod_", "stripe_live_key", rb"sk_prod_[A-Za-z0-9]{10,}", True),
    (b"rk_prod_", "stripe_restricted_key", rb"rk_prod_[A-Za-z0-9]{10,}", True),
    (b"sk_test_", "stripe_test_key", rb"sk_test_[A-Za-z0-9]{10,}", True),
    # Checkout.com secret keys: sk_[test_]<uuid> (their API docs' key format).
    (b"sk_", "checkout_secret_key", rb"sk_(?:test_)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}" + _END, False),
    (b"rk_live_", "stripe_restricted_key", rb"rk_live_[A-Za-z0-9]{10,}", True),
    (b"rk_test_", "stripe_restricted_key", rb"rk_test_[A-Za-z0-9]{10,}", True),
    (b"whsec_", "stripe_webhook_secret", rb"whsec_[A-Za-z0-9+/]{24,}", True),
    # AWS access key ids (AKIA long-term, ASIA STS, ABIA/ACCA service). AIDA/AROA/AGPA/ANPA are
    # principal ids printed by `aws sts get-caller-identity`, not credentials: left clean.
    (b"AKIA", "aws_access_key_id", rb"AKIA[A-Z0-9]{16}" + _END_ALNUM, False),
    (b"ABIA", "aws_access_key_id", rb"ABIA[A-Z2-7]{16}" + _END_ALNUM, False),
    (b"ACCA", "aws_access_key_id", rb"ACCA[A-Z2-7]{16}" + _END_ALNUM, False),
    (b"ASIA", "aws_session_key_id", rb"ASIA[A-Z0-9]{16}" + _END_ALNUM, False),
    # GitHub (github.blog 2021 token format): prefix + 36 base62 (+ fine-grained 82 chars).
    (b"github_pat_", "github_fine_grained_pat", rb"github_pat_[A-Za-z0-9_]{40,}", True),
    (b"ghp_", "github_pat", rb"ghp_[A-Za-z0-9]{30,}", True),
    (b"gho_", "github_oauth", rb"gho_[A-Za-z0-9]{30,}", True),
    (b"ghu_", "github_user_token", rb"ghu_[A-Za-z0-9]{30,}", True),
    (b"ghs_", "github_server_token", rb"ghs_[A-Za-z0-9]{30,}", True),
    (b"ghr_", "github_refresh_token", rb"ghr_[A-Za-z0-9]{30,}", True),
    # Slack (api.slack.com/authentication/token-types).
    (b"xoxb-", "slack_bot_token", rb"xoxb-[0-9A-Za-z-]{10,}", True),
    (b"xoxp-", "slack_user_token", rb"xoxp-[0-9A-Za-z-]{10,}", True),
    (b"xoxa-", "slack_app_token", rb"xoxa-[0-9A-Za-z-]{10,}", True),
    (b"xoxr-", "slack_refresh_token", rb"xoxr-[0-9A-Za-z-]{10,}", True),
    (b"xoxe", "slack_token", rb"xoxe(?:\.xox[bp])?-[0-9A-Za-z-]{10,}", True),
    (b"xoxs-", "slack_token", rb"xoxs-[0-9A-Za-z-]{10,}", True),
    (b"xapp-", "slack_app_level_token", rb"xapp-\d-[A-Za-z0-9-]{10,}", True),
    # GitLab (docs.gitlab.com/ee/security/tokens): glpat-<20+>, runner glrt-, others.
    (b"glpat-", "gitlab_pat", rb"glpat-" + _B64U + rb"{20,}", True),
    (b"glrt-", "gitlab_runner_token", rb"glrt-" + _B64U + rb"{20,}", True),
    (b"gldt-", "gitlab_token", rb"gldt-" + _B64U + rb"{20,}", True),
    (b"glptt-", "gitlab_token", rb"glptt-" + _B64U + rb"{20,}", True),
    (b"glcbt-", "gitlab_token", rb"glcbt-" + _B64U + rb"{20,}", True),
    (b"glft-", "gitlab_token", rb"glft-" + _B64U + rb"{20,}", True),
    (b"glsoat-", "gitlab_token", rb"glsoat-" + _B64U + rb"{20,}", True),
    # Google: API key AIza+35, OAuth client secret GOCSPX-+28.
    (b"AIza", "google_api_key", rb"AIza[0-9A-Za-z_-]{35}", True),
    (b"GOCSPX-", "google_oauth_client_secret", rb"GOCSPX-" + _B64U + rb"{24,}", True),
    # JWT: header.payload[.signature], both JSON objects (base64url of '{"').
    (b"eyJ", "jwt", rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.(?:[A-Za-z0-9_-]{8,})?", True),
    (b"ey", "jwt", rb"ey[A-Za-z0-9]{17,}\.ey[A-Za-z0-9/_-]{17,}\.", True),
    # Private key bodies without their PEM header: PKCS#8 / PKCS#1 RSA DER, SEC1 EC, OpenSSH.
    (b"MII", "private_key", rb"MII[A-Za-z0-9+/]{3}IBA(?:DAN|AK)", True),
    (b"MIG", "private_key", rb"MIG[A-Za-z0-9+/]AgEAMBMGByqGSM49", True),
    (b"MHcCAQEE", "private_key", rb"MHcCAQEE[A-Za-z0-9+/]{20,}", True),
    (b"b3BlbnNzaC1rZXktdjE", "private_key", rb"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{20,}", True),
    (b"AGE-SECRET-KEY-1", "age_secret_key", rb"AGE-SECRET-KEY-1[0-9A-Z]{50,}", False),
    # Other providers (each documented prefix + length).
    (b"gsk_", "groq_key", rb"gsk_[A-Za-z0-9]{20,}", True),
    (b"xai-", "xai_key", rb"xai-[A-Za-z0-9]{20,}", True),
    (b"dop_v1_", "digitalocean_token", rb"do[opr]_v1_[a-f0-9]{40,}", True),
    (b"doo_v1_", "digitalocean_token", rb"do[opr]_v1_[a-f0-9]{40,}", True),
    (b"dor_v1_", "digitalocean_token", rb"do[opr]_v1_[a-f0-9]{40,}", True),
    (b"shpat_", "shopify_access_token", rb"shpat_[a-fA-F0-9]{20,}", True),
    (b"shpss_", "shopify_shared_secret", rb"shpss_[a-fA-F0-9]{20,}", True),
    (b"shpca_", "shopify_token", rb"shpca_[a-fA-F0-9]{20,}", True),
    (b"shppa_", "shopify_token", rb"shppa_[a-fA-F0-9]{20,}", True),
    # Twilio API key SID: SK + 32 hex.
    (b"SK", "twilio_key", rb"SK[0-9a-fA-F]{32}" + _END, True),
    (b"AC", "twilio_account_sid", rb"AC[0-9a-f]{32}" + _END, True),  # detect-secrets TwilioKeyDetector
    # Mailgun private key: key-<32 [0-9a-z]> (docs example key-3ax6xnjp29jd6fds4gc373sgvjxteol0).
    (b"key-", "mailgun_key", rb"key-[0-9a-z]{32}" + _END, True),
    (b"dapi", "databricks_token", rb"dapi[0-9a-f]{32}(?:-\d)?" + _END, True),
    (b"pypi-AgE", "pypi_token", rb"pypi-AgE[A-Za-z0-9_-]{40,}", True),
    (b"lin_api_", "linear_api_key", rb"lin_api_[A-Za-z0-9]{40}", True),
    (b"ntn_", "notion_token", rb"ntn_[A-Za-z0-9]{40,}", True),
    (b"secret_", "notion_token", rb"secret_[A-Za-z0-9]{43}" + _END, True),
    (b"PMAK-", "postman_api_key", rb"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", True),
    (b"ATATT3", "atlassian_api_token", rb"ATATT3[A-Za-z0-9_=-]{100,}", True),
    (b"sntrys_", "sentry_token", rb"sntrys_eyJ[A-Za-z0-9+/=_-]{30,}", True),
    (b"sntryu_", "sentry_token", rb"sntryu_[a-f0-9]{64}", True),
    (b"glsa_", "grafana_token", rb"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", True),
    (b"glc_", "grafana_token", rb"glc_[A-Za-z0-9+/]{32,}", True),
    (b"NRAK-", "newrelic_api_key", rb"NRAK-[A-Z0-9]{27}", True),
    (b"r8_", "replicate_token", rb"r8_[A-Za-z0-9]{37}", True),
    (b"pplx-", "perplexity_key", rb"pplx-[A-Za-z0-9]{40,}", True),
    (b"sbp_", "supabase_token", rb"sbp_[a-f0-9]{40}", True),
    (b"sb_secret_", "supabase_token", rb"sb_secret_" + _B64U + rb"{20,}", True),
    (b"tskey-", "tailscale_key", rb"tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}", True),
    (b"ops_eyJ", "onepassword_token", rb"ops_eyJ[A-Za-z0-9+/=_-]{30,}", True),
    (b"pul-", "pulumi_token", rb"pul-[a-f0-9]{40}", True),
    (b"figd_", "figma_token", rb"figd_" + _B64U + rb"{40,}", True),
    # More documented prefixes (gitleaks rule set, MIT; each provider's token docs).
    (b"A3-", "onepassword_secret_key", rb"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}", False),
    (b"p8e-", "adobe_client_secret", rb"p8e-[A-Za-z0-9]{32}", True),
    (b"LTAI", "alibaba_access_key_id", rb"LTAI[A-Za-z0-9]{12,20}" + _END, True),
    (b"pat", "airtable_token", rb"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", True),
    (b"FLWSECK", "flutterwave_key", rb"FLWSECK(?:_TEST)?-[A-Za-z0-9]{12,}", True),
    (b"FLWPUBK", "flutterwave_key", rb"FLWPUBK(?:_TEST)?-[A-Za-z0-9]{12,}", True),
    (b"glffct-", "gitlab_token", rb"glffct-" + _B64U + rb"{20}", True),
    (b"glimt-", "gitlab_token", rb"glimt-" + _B64U + rb"{25}", True),
    (b"gloas-", "gitlab_token", rb"gloas-" + _B64U + rb"{20,}", True),
    (b"glagent-", "gitlab_token", rb"glagent-" + _B64U + rb"{50,}", True),
    (b"GR1348941", "gitlab_token", rb"GR1348941" + _B64U + rb"{20}", True),
    (b"API-", "octopus_deploy_key", rb"API-[A-Z0-9]{26}" + _END, False),
    (b"sm_", "settlemint_token", rb"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}", True),
    (b"shippo_", "shippo_token", rb"shippo_(?:live|test)_[a-fA-F0-9]{40}", True),
    (b"pubkey-", "mailgun_key", rb"pubkey-[a-f0-9]{32}", True),
    (b"NRJS-", "newrelic_api_key", rb"NRJS-[a-f0-9]{19}", True),
    (b"NRAA-", "newrelic_api_key", rb"NRAA-[a-f0-9]{27}" + _END, True),
    (b"NRSP-", "newrelic_api_key", rb"NRSP-[a-z]{2}[0-9]{2}[a-f0-9]{31}" + _END, True),
    (b"NRII-", "newrelic_api_key", rb"NRII-[A-Za-z0-9-]{32}", True),
    (b"pnu_", "prefect_token", rb"pnu_[A-Za-z0-9]{36}", True),
    (b"rdme_", "readme_token", rb"rdme_[a-z0-9]{70}", True),
    (b"xkeysib-", "sendinblue_key", rb"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", True),
    (b"fio-u-", "frameio_token", rb"fio-u-[A-Za-z0-9_=-]{64}", True),
    (b"AKCp", "artifactory_api_key", rb"AKCp[A-Za-z0-9]{69}" + _END, True),
    (b"cmVmd", "artifactory_reference_token", rb"cmVmd[A-Za-z0-9]{59}" + _END, True),
    (b"CLOJARS_", "clojars_token", rb"CLOJARS_[A-Za-z0-9]{60}", True),
    (b"4b1d", "clickhouse_api_secret", rb"4b1d[A-Za-z0-9]{38}" + _END, True),
    (b"EAA", "facebook_access_token", rb"EAA[MC][A-Za-z0-9]{100,}", True),
    (b"EAACEdEose0cBA", "facebook_access_token", rb"EAACEdEose0cBA[0-9A-Za-z]+", True),  # Graph API Explorer tokens
    (b"eyJrIjoi", "grafana_token", rb"eyJrIjoi[A-Za-z0-9]{70,400}", True),
    (b"HRKU-AA", "heroku_api_key", rb"HRKU-AA[A-Za-z0-9_-]{58}", True),
    (b"duffel_", "duffel_token", rb"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}", True),
    (b"ZXlK", "jwt", rb"ZXlK[A-Za-z0-9+/_\\-]{40,}", True),
    (b"sq0atp-", "square_token", rb"sq0atp-" + _B64U + rb"{22,}", True),
    (b"sq0csp-", "square_token", rb"sq0csp-" + _B64U + rb"{40,}", True),
    (b"EAAA", "square_token", rb"EAAA[A-Za-z0-9_-]{22,60}" + _END, True),
    # More documented shapes (gitleaks config/gitleaks.toml, MIT: the rule named after each).
    (b"api_org_", "huggingface_token", rb"api_org_[A-Za-z]{34}" + _END, False),
    (b"rubygems_", "rubygems_token", rb"rubygems_[a-f0-9]{48}" + _END, True),
    (b"live_", "lob_api_key", rb"live_(?:pub_)?[a-f0-9]{31,35}" + _END, True),
    (b"test_", "lob_api_key", rb"test_(?:pub_)?[a-f0-9]{31,35}" + _END, True),
    (b"s-s4t2", "intra42_client_secret", rb"s-s4t2(?:ud|af)-[a-fA-F0-9]{64}" + _END, True),
    (b"xoxo-", "slack_token", rb"xoxo-[0-9]+-[0-9]+-[0-9]+-[a-fA-F0-9]+", False),
    (b"xoxs-", "slack_token", rb"xoxs-[0-9]+-[0-9]+-[0-9]+-[a-fA-F0-9]+", False),
    (b"EZAK", "easypost_token", rb"EZAK[A-Za-z0-9]{54}" + _END, True),
    (b"EZTK", "easypost_token", rb"EZTK[A-Za-z0-9]{54}" + _END, True),
    (b"fo1_", "flyio_token", rb"fo1_[A-Za-z0-9_-]{43}" + _END, True),
    (b"fm1", "flyio_token", rb"fm1[ar]_[A-Za-z0-9+/]{30,}", True),
    (b"fm2_", "flyio_token", rb"fm2_[A-Za-z0-9+/]{30,}", True),
    (b"ico-", "infracost_token", rb"ico-[A-Za-z0-9]{32}" + _END, True),
    (b"tk-us-", "scalingo_token", rb"tk-us-[A-Za-z0-9_-]{48}" + _END, True),
    (b"R_", "bitly_secret_key", rb"R_[0-9a-f]{32}" + _END, True),  # Bitly legacy API keys
    (b"rzp_", "razorpay_key", rb"rzp_[A-Za-z0-9]{2,6}_[A-Za-z0-9_]{10,20}" + _END, True),  # rzp_live_<14>, rzp_test_<14>
    (b"sgp_", "sourcegraph_token", rb"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}" + _END, True),
]

# Markers whose anchor ends in "." (the token run starts after it).
_DOT_MARKERS = [
    (b"dt0c01.", "dynatrace_token", rb"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", True),
    (b"pk.", "mapbox_token", rb"pk\.[A-Za-z0-9]{60}\.[A-Za-z0-9_-]{22}", True),
    (b"t1.", "yandex_token", rb"t1\.[A-Za-z0-9_-]+={0,2}\.[A-Za-z0-9_-]{86}", True),
    (b"atlasv1.", "terraform_cloud_token", rb"atlasv1\.[A-Za-z0-9_=-]{60,70}", True),
    (b"sat.", "harness_token", rb"sat\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}", True),
    (b"pat.", "harness_token", rb"pat\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}", True),
    (b"ya29.", "google_oauth_token", rb"ya29\.[0-9A-Za-z_-]{20,}", True),
    (b"hvs.", "vault_token", rb"hvs\.[A-Za-z0-9_-]{24,}", True),
    (b"hvb.", "vault_token", rb"hvb\.[A-Za-z0-9_-]{24,}", True),
    (b"sk.", "mapbox_secret_token", rb"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", True),
    (b"v1.", "cloudflare_origin_ca_key", rb"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", True),
    (b"s.", "vault_token", rb"s\.(?=[A-Za-z]*[0-9])[A-Za-z0-9]{24}(?![A-Za-z0-9_.-])", True),
    (b"sl.", "dropbox_token", rb"sl\.[A-Za-z0-9=_-]{130,}", True),
    (b"dp.pt.", "doppler_token", rb"dp\.pt\.[A-Za-z0-9]{40,}", True),
    (b"dp.st.", "doppler_token", rb"dp\.st\.(?:[a-z0-9_-]{2,35}\.)?[A-Za-z0-9]{40,}", False),
    # Amazon Marketplace Web Service auth tokens: amzn.mws.<uuid> (MWS developer guide).
    (b"amzn.mws.", "aws_mws_token", rb"amzn\.mws\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", False),
]
# Prefixed tokens replaced in place (docs/security.md, Redaction): keep the prefix, drop the tail.
_PREFIXED = [
    (b"hf_", "huggingface_token", _Lazy(rb"hf_([A-Za-z0-9]{20,})")),
    (b"npm_", "npm_token", _Lazy(rb"npm_([A-Za-z0-9]{20,})")),
]
_SENDGRID = _Lazy(rb"SG\.([A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|[A-Za-z0-9=_.-]{66}(?![A-Za-z0-9=_.-]))")
_FOUND_MARKERS = [
    # Anchors of tokens whose alphabet leaves the token-run class ([A-Za-z0-9_-]): "=", "+", "/",
    # "." or "~" may cut the run right after the anchor, so these are found by bytes.find over
    # the whole field instead (one memchr-speed pass each). Sources: gitleaks rules
    # hashicorp-tf-api-token, grafana-cloud-api-token, 1password-service-account-token,
    # sentry-org-token, openshift-user-token (config/gitleaks.toml, MIT).
    (b"atlasv1.", "terraform_cloud_token", _Lazy(rb"atlasv1\.[A-Za-z0-9_=-]{60,70}")),
    (b"glc_", "grafana_token", _Lazy(rb"glc_[A-Za-z0-9+/]{32,400}")),
    (b"ops_eyJ", "onepassword_token", _Lazy(rb"ops_eyJ[A-Za-z0-9+/=_-]{30,}")),
    (b"sntrys_eyJ", "sentry_token", _Lazy(rb"sntrys_eyJ[A-Za-z0-9+/=_-]{30,}")),
    (b"whsec_", "stripe_webhook_secret", _Lazy(rb"whsec_[A-Za-z0-9+/]{24,}")),
    (b"tfp_", "typeform_token", _Lazy(rb"tfp_[A-Za-z0-9_.=-]{59}")),
    (b"pscale_", "planetscale_token", _Lazy(rb"pscale_(?:pw|oauth|tkn)_[A-Za-z0-9_=.-]{32,64}")),
    (b"ABSK", "aws_bedrock_api_key", _Lazy(rb"ABSK[A-Za-z0-9+/]{109,269}")),
    (b"bedrock-api-key-", "aws_bedrock_api_key", _Lazy(rb"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=]{0,2000}")),
]
_AUTHRESS = _Lazy(rb"(?:(?<![A-Za-z0-9_])|(?<=\\[ntr]))(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120}")
_OPENSHIFT = _Lazy(rb"sha256~[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")
_FACEBOOK_APP_TOKEN = _Lazy(rb"(?<![0-9])[0-9]{15,16}(?:\||%7[Cc]|%)([0-9a-zA-Z_-]{27,40})(?![0-9a-zA-Z_-])")
"""A Facebook app access token, ``<app id>|<app secret>`` (15–16 digit id; gitleaks
``facebook-access-token``); ``%``/``%7C`` when URL-encoded."""


def _by_first_two(markers, prefixed) -> dict:
    """First two bytes of an anchor → [(anchor, rule, regex, needs mixed tail, in place)],
    most specific (longest) anchor first."""
    rows = [(a, rule, _Lazy(p), mixed, False) for a, rule, p, mixed in markers]
    rows += [(a, rule, rx, False, True) for a, rule, rx in prefixed]
    out: dict = {}
    for row in rows:
        out.setdefault(row[0][:2], []).append(row)
    for key in out:
        out[key].sort(key=lambda r: -len(r[0]))
    return out


_START_BY_2 = _by_first_two(_START_MARKERS, _PREFIXED)
_ANCHORS_BY_2 = {key: tuple(row[0] for row in rows) for key, rows in _START_BY_2.items()}
"""First two bytes → the anchors starting with them, for one ``bytes.startswith`` per run before
:func:`_marker_at` is called (most runs share two bytes with an anchor but not the anchor)."""
_JWT = _Lazy(next(p for a, _, p, _ in _START_MARKERS if a == b"eyJ"))
_SGR = re.compile(rb"[0-9]{1,3}m")
_DOT_ROWS = [(a, rule, _Lazy(p), m) for a, rule, p, m in _DOT_MARKERS]
_DOT_ANCHORS = tuple(a for a, *_ in _DOT_MARKERS)
_DOT_ANCHOR_MAX = max(map(len, _DOT_ANCHORS))

# Context markers (checked on a run by the character before it).
_TELEGRAM = _Lazy(rb"(?<![0-9])[0-9]{5,16}:A[A-Za-z0-9_-]{34}" + _END)
_AZURE_AD_SECRET = _Lazy(rb"(?:(?<![A-Za-z0-9_~.-])|(?<=\\[ntr]))[A-Za-z0-9_.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])")
_GOOGLE_REFRESH = _Lazy(rb"1//0[A-Za-z0-9_-]{40,}")
_MAILGUN_NEW = _Lazy(rb"[0-9a-h]{32}-[0-9a-h]{8}-[0-9a-h]{8}")
_SLACK_HOOK = b"hooks.slack.com/"
_SLACK_HOOK_KINDS = (b"services/", b"workflows/", b"triggers/")
"""Slack's incoming webhooks (``/services/``) and Workflow Builder webhooks (``/workflows/``,
``/triggers/``): the URL is the credential (gitleaks ``slack-webhook-url``)."""
_MAILCHIMP = _Lazy(rb"[0-9a-f]{32}-us[0-9]{1,2}")
"""A Mailchimp API key: 32 lowercase hex digits, ``-us`` and the data-centre number (Mailchimp
Marketing API docs, "API keys"; gitleaks ``mailchimp-api-key``): the suffix makes the shape its
own, with or without the provider's name before it."""
_TEAMS_HOOK = b".webhook.office.com/webhookb2/"
"""Microsoft Teams incoming webhooks, ``https://<tenant>.webhook.office.com/webhookb2/<ids>``
(Microsoft Teams docs, "Create an Incoming Webhook"): the URL is the credential, as Slack's."""
_DISCORD_HOOK = _Lazy(rb"discord(?:app)?\.com/api/webhooks/[0-9]{5,}/$")
_PEM_PRIVATE = _Lazy(rb"-----BEGIN[A-Z0-9 _-]{0,100}PRIVATE KEY(?: BLOCK)?-----")


def _marker_at(sc: _Scan, s: int, rows) -> None:
    b = sc.b
    for anchor, rule, rx, mixed, inplace in rows:
        if b.startswith(anchor, s):
            m = rx.match(b, s)
            if not m:
                continue
            if inplace:  # prefixed token (docs/security.md, Redaction): keep the prefix
                tail = m.group(1)
                if _mixed(tail) or (len(tail) == 34 and tail.isalpha()):  # hf_ + 34 letters (gitleaks)
                    sc.span(m.start(1), m.end(1), _P, rule)
                return
            if not mixed or _mixed(m.group(1) if m.re.groups else m.group(0)[len(anchor):]):
                sc.marks.add(rule)
                return


_INNER_ANCHOR = _Lazy(rb"[-_](?=" + b"|".join(sorted({re.escape(a[:2]) for a, *_ in _START_MARKERS})) + rb")")


def _inner_markers(sc: _Scan, by2: dict, k: int, j: int) -> None:
    """Markers that start after a ``-`` or ``_`` inside the token run ``b[k:j]`` (the run's own
    start was tried already); only positions leaving room for a 16-character token."""
    b = sc.b
    m = _INNER_ANCHOR.search(b, k, j - 16)  # from k: a run may start with the separator ("-ghp_…")
    while m is not None:
        p = m.start() + 1
        _marker_at(sc, p, by2[b[p:p + 2]])
        m = _INNER_ANCHOR.search(b, p, j - 16)


def _scan_tokens(sc: _Scan) -> None:
    """Markers and prefixed tokens: every token run of >= 20 characters, whole field.

    A run is tried against the markers whose anchor starts with the run's first two bytes
    (one dict lookup per run); the byte before the run selects the context rules (``.`` for
    ``ya29.``/``SG.``-style anchors and split JWTs, ``/`` for webhook URLs and Google refresh
    tokens, ``:`` for Telegram bot tokens)."""
    b = sc.b
    if len(b) < _KEYED_MIN_RUN:
        return  # no token run
    low = sc.lower()
    by2 = _START_BY_2
    anchors_by2 = _ANCHORS_BY_2
    op_near = _OPERATOR_NEAR
    seen = _PROVIDER_SEEN
    openers = _VALUE_OPENERS
    inner = _INNER_ANCHOR.search
    runs = sc.token_runs = [m.span() for m in _run_rx(_KEYED_MIN_RUN).finditer(b.translate(_TOKEN_CLS))]
    for k, j in runs:
        s = k
        if k:
            p = q = b[k - 1]
            c = b[k]
            if p == 92:
                if c in b"ntr":
                    s = k + 1  # run begins right after a JSON escape such as \n
                    q = c
            elif 48 <= c <= 57 and p in b"[;%":
                if p == 37:
                    s = k + 2  # URL-encoded separator: %3Dghp_..., %20sk-...
                    q = b[k + 1]
                else:
                    sgr = _SGR.match(b, k)  # ANSI colour: ESC[32mghp_...
                    if sgr:
                        s = sgr.end()
                        q = b[s - 1]
            if (q in openers or (q == 116 and b[s - 2] == 92)) and op_near(b, s - 17 if s > 17 else 0, s):
                hit = seen.get(low[s - 48 if s > 48 else 0:s])  # the verdict _provider_keyed cached, if any
                if hit is None or hit >= 0:
                    _provider_keyed(sc, s)  # "HEROKU_API = <uuid>": a provider name before the value
        n = j - k
        if n >= 21 and inner(b, k, j - 16) is not None:  # a separator and the shortest marked token (AKIA + 16)
            _inner_markers(sc, by2, k, j)  # "key-AKIA...", "x-AKIA...", "prod_AKIA...", "token_ghp_..."
        key = b[s:s + 2]
        anchors = anchors_by2.get(key)
        if anchors is not None and b.startswith(anchors, s):
            _marker_at(sc, s, by2[key])
        if n < 36:
            pass  # the shapes below are 36 characters or more
        elif n == 50 and _MAILGUN_NEW.fullmatch(b, k, j):
            sc.marks.add("mailgun_key")
        elif j - s == 40 and b.endswith(b"_mmk", s, j) and b[s + 6] == 95:
            sc.marks.add("maxmind_license_key")  # <6>_<29>_mmk
        elif 36 <= j - s <= 37 and b[s + 32:s + 35] == b"-us" and _MAILCHIMP.fullmatch(b, s, j):
            sc.marks.add("mailchimp_key")
        if k == 0:
            continue
        prev = b[k - 1]
        if prev == 46:  # "."
            if b.endswith(_DOT_ANCHORS, max(0, k - _DOT_ANCHOR_MAX), k):
                for anchor, rule, rx, mixed in _DOT_ROWS:
                    a0 = k - len(anchor)
                    if a0 >= 0 and b.startswith(anchor, a0) and _bounded(b, a0):
                        dm = rx.match(b, a0)
                        if dm and (not mixed or _mixed(dm.group(0)[len(anchor):])):
                            sc.marks.add(rule)
                            break
            if b.startswith(b"eyJ", k):  # JWT whose header run was shorter than 20
                h = b.rfind(b"eyJ", max(0, k - 4096), k - 1)
                if h >= 0 and _bounded(b, h) and _JWT.match(b, h):
                    sc.marks.add("jwt")
        elif prev == 47:  # "/"
            h = b.find(_SLACK_HOOK, max(0, k - 64), k)
            if h >= 0 and b.startswith(_SLACK_HOOK_KINDS, h + 16):
                sc.marks.add("slack_webhook")
            elif b.find(b"webhooks/", max(0, k - 40), k) >= 0 and _DISCORD_HOOK.search(b, max(0, k - 80), k):
                sc.marks.add("discord_webhook")
            elif k >= 3 and b[k - 3:k] == b"1//" and _GOOGLE_REFRESH.match(b, k - 3):
                sc.marks.add("google_refresh_token")
            elif b.endswith(_TEAMS_HOOK, max(0, k - 30), k):
                sc.marks.add("teams_webhook")
        elif prev == 58:  # ":"
            if j - k == 35 and b[k] == 65 and _TELEGRAM.search(b, max(0, k - 17), j):
                sc.marks.add("telegram_bot_token")
        elif prev == 124 or prev == 37:  # "|" or "%": a Facebook app token "<app id>|<app secret>"
            if k >= 16 and 48 <= b[k - 2] <= 57 and _FACEBOOK_APP_TOKEN.search(b, max(0, k - 20), min(len(b), j + 1)):
                sc.marks.add("facebook_access_token")


def _tildes(b: bytes, sha256: bool = False):
    """Positions of "~": memchr while "~" is rare, then only those after "Q" (and after
    "sha256" when ``sha256``), by finds of "Q~" / "sha256~"."""
    i = b.find(b"~")
    seen = 0
    while i >= 0:
        seen += 1
        if seen > 64:
            hits = [q + 1 for q in _finds(b, b"Q~", max(0, i - 1))]
            if sha256:
                hits += [q + 6 for q in _finds(b, b"sha256~", max(0, i - 6))]
            yield from sorted(hits)
            return
        yield i
        i = b.find(b"~", i + 1)


_WIDE_CLS = _table({_ALNUM + "_-+/=.": ord("a")}, ord(" "))
"""Bytes of the found markers, Authress keys and SendGrid keys: every match of theirs lies inside
one run of these, at least :data:`_WIDE_MIN_RUN` long."""
_WIDE_MIN_RUN = 30
"""Shortest match of a wide marker (``whsec_`` + 24)."""
_WIDE_GATE_MAX = 64 * 1024
"""Up to this many bytes, one translate and one run search decide whether a field holds a run of
:data:`_WIDE_MIN_RUN` at all before the anchors' finds (11 calls); past it, the finds are
cheaper than the translate the gate would add where no anchor occurs."""


def _wide_hits(sc: _Scan, anchor: bytes, i: int):
    """Start of each occurrence of ``anchor`` from ``i`` (its first one, which the caller found
    with one ``bytes.find`` over the whole field) that lies in a run of :data:`_WIDE_CLS` bytes at least :data:`_WIDE_MIN_RUN` long. The run
    around a hit is read off one translate of the field (made on the first hit), and the last
    run is remembered, so many hits in one long run cost linear time."""
    b = sc.b
    cls = sc.wide_cls
    if cls is None:
        cls = sc.wide_cls = b.translate(_WIDE_CLS)
    rs = re_ = -1
    while i >= 0:
        if i >= re_:
            rs = cls.rfind(b" ", 0, i) + 1
            re_ = cls.find(b" ", i)
            if re_ < 0:
                re_ = len(cls)
        if re_ - rs >= _WIDE_MIN_RUN:
            yield i
        i = b.find(anchor, i + 1)


def _scan_wide(sc: _Scan) -> None:
    """Markers whose alphabet leaves the token-run class (:data:`_FOUND_MARKERS`), Authress
    service keys and SendGrid keys (in place), whole field. Each anchor is found by
    ``bytes.find`` (:func:`_wide_hits`: no per-run work where no anchor occurs); a hit counts
    only inside a run of :data:`_WIDE_CLS` of ≥ 30 bytes, where every match of these lies."""
    b = sc.b
    if len(b) < _WIDE_MIN_RUN:
        return
    if len(b) <= _WIDE_GATE_MAX:
        sc.wide_cls = b.translate(_WIDE_CLS)
        if _run_rx(_WIDE_MIN_RUN).search(sc.wide_cls) is None:
            return  # no run a wide marker could lie in (most prose, most short fields)
    find = b.find
    for anchor, rule, rx in _FOUND_MARKERS:
        first = find(anchor)
        if first < 0:
            continue  # most fields hold none: no generator for them
        for i in _wide_hits(sc, anchor, first):
            m = rx.match(b, i)
            if m and _mixed(m.group(0)[len(anchor):]) and (_bounded(b, i) or anchor[-1] == 46):
                sc.marks.add(rule)
                break
    first = find(b".acc")
    for i in _wide_hits(sc, b".acc", first) if first >= 0 else ():  # Authress service keys: <sc|ext|...>_<id>.<4-6>.acc_<id>.<secret>
        m = _AUTHRESS.search(b, max(0, i - 44), min(len(b), i + 200))
        if m and m.start() < i < m.end():
            sc.marks.add("authress_key")
            break
    first = find(b"SG.")
    for i in _wide_hits(sc, b"SG.", first) if first >= 0 else ():  # SendGrid: SG.<22>.<43>, in place (docs/security.md, Redaction)
        sg = _bounded(b, i) and _SENDGRID.match(b, i)
        if sg and _mixed(sg.group(1)):
            sc.span(sg.start(1), sg.end(1), _P, "sendgrid_key")


def _scan_rare(sc: _Scan) -> None:
    """Markers found by a rare byte, whole field: private-key PEM headers (``-----BEGIN``),
    OpenShift tokens (``sha256~``) and Azure AD client secrets (``Q~``)."""
    b = sc.b
    for i in (_finds(b, b"-----BEGIN", first) if (first := b.find(b"-----BEGIN")) >= 0 else ()):
        if _PEM_PRIVATE.match(b, i):
            sc.marks.add("private_key")
            break
    # Azure AD client secrets: 3 chars, a digit, "Q~", 31-34 chars (dots allowed). "~" is rare,
    # so walk it with memchr; if it is not rare here, look for "Q~" instead.
    for i in _tildes(b, sha256=True) if b.find(b"~") >= 0 else ():
        if i >= 6 and b[i - 1] == 54 and b.endswith(b"sha256", i - 6, i) and _OPENSHIFT.match(b, i - 6):
            sc.marks.add("openshift_token")  # sha256~<43>: OpenShift OAuth tokens (gitleaks openshift-user-token)
        elif i >= 5 and b[i - 1] == 81 and 48 <= b[i - 2] <= 57 \
                and _AZURE_AD_SECRET.match(b, i - 5, min(len(b), i + 40)):
            sc.marks.add("azure_ad_client_secret")
            break
