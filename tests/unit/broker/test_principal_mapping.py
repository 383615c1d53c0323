"""ssl.principal.mapping.rules: Kafka's rule syntax, and the examples of its docs."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from broker.security.principal_mapping import (
    NoMatchingRule,
    map_name,
    parse_rules,
    subject_name,
)
from config.errors import ConfigError

#: the rules of Kafka's security documentation ("Customizing SSL User Name")
DOCS_RULES = (
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,"
    "DEFAULT"
)


def test_the_documented_examples() -> None:
    rules = parse_rules(DOCS_RULES)
    service = "CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"
    admin = "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"
    assert map_name(rules, service) == "serviceuser"
    assert map_name(rules, admin) == "adminuser@admin"


def test_the_first_matching_rule_wins_and_default_keeps_the_dn() -> None:
    rules = parse_rules("RULE:^CN=(.*?),O=acme$/$1/U,DEFAULT")
    assert map_name(rules, "CN=alice,O=acme") == "ALICE"
    assert map_name(rules, "CN=bob,O=other") == "CN=bob,O=other"


def test_commas_with_newlines_escaped_slashes_and_empty_entries() -> None:
    rules = parse_rules("RULE:^CN=(.*?)\\/(.*)$/$2\\/$1/,\n , \n  DEFAULT")
    assert map_name(rules, "CN=a/b") == "b/a"
    assert map_name(rules, "CN=ab") == "CN=ab"


def test_group_references_as_java_reads_them() -> None:
    # $12 with one group is group 1 then "2"; $4 naming no group stays literal
    rules = parse_rules("RULE:^CN=(.*)$/$12-$4-\\$1-x/")
    assert map_name(rules, "CN=bob") == "bob2-$4-$1-x"
    named = parse_rules("RULE:^CN=(?P<user>.*)$/${user}@corp/")
    assert map_name(named, "CN=eve") == "eve@corp"


def test_a_rule_must_match_the_whole_dn() -> None:
    rules = parse_rules("RULE:CN=(.*?),/$1/")
    with pytest.raises(NoMatchingRule):
        map_name(rules, "CN=alice,O=acme")


def test_without_default_an_unmatched_dn_has_no_name() -> None:
    with pytest.raises(NoMatchingRule):
        map_name(parse_rules("RULE:^CN=admin$/root/"), "CN=alice")


def test_default_and_empty_are_the_identity() -> None:
    assert map_name(parse_rules("DEFAULT"), "CN=x,O=y") == "CN=x,O=y"
    assert map_name(parse_rules(""), "CN=x") == "CN=x"


@pytest.mark.parametrize(
    "text",
    [
        "RULE:^CN=(.*)$/$1",
        "NOPE",
        "RULE:^CN=(.*$/$1/",
        "RULE:^CN=(.*)$/$1/X",
        "RULE:(x)/$y/",
        "RULE:^(a)$/${b}/",
    ],
)
def test_malformed_rules_are_refused_naming_the_key(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_rules(text, "listener.name.secure.ssl.principal.mapping.rules")
    assert info.value.key == "listener.name.secure.ssl.principal.mapping.rules"


def test_subject_name_is_rfc2253_most_specific_first() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "acme, inc"),
            x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
            x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b.c"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    dn = subject_name(cert.public_bytes(serialization.Encoding.DER))
    # emailAddress has no keyword in Java's form: its OID, then # and its DER (IA5String)
    email = "1.2.840.113549.1.9.1=#1605" + b"a@b.c".hex()
    assert dn == email + ",CN=alice,O=acme\\, inc,C=DE"
