"""The rules across options fire identically in the Python builders and in the jar.

The rules are declared once (``OptionRules.scala``) and exported in the jar's option table; the
builders evaluate the exported copy. Here the same generated option maps go through the builders
and through the jar's own option parsing (``io.sparkkinesis.tools.CheckOptionsTool``, the source's
or the sink's full ``parse``, in one JVM): both must accept, or both refuse with the same rule id
and the same text. The maps are, for every rule, every combination of its options and of those of
the rules that share an option with it (unset or one of a few valid values each), plus seeded
random mixtures of the options of all rules.
"""

from __future__ import annotations

import itertools
import os
import random
import subprocess
from typing import Any

import pytest
from harness.option_checks import check_in_jar
from spark_kinesis import KinesisSink, KinesisSource, jar_paths
from spark_kinesis._fields import option_fields
from spark_kinesis.option_table import OptionRuleError, load_option_rules, load_option_table

ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/"
PROVIDER_CLASS = "rules.Provider"

# Valid values of the options the rules read: the rules decide, not the single-value checks.
SAMPLES: dict[str, list[str]] = {
    "streamName": ["orders", "orders,clicks"],
    "streamArn": [ARN + "orders", f"{ARN}orders,{ARN}clicks"],
    "endpointUrl": ["https://localhost:4567", "http://127.0.0.1:4566"],
    "consumerType": ["GetRecords", "SubscribeToShard"],
    "consumerName": ["reader"],
    "consumerArn": [ARN + "orders/consumer/reader:1700000000"],
    "consumerTags": ["team=risk"],
    "consumerDeregisterOnStop": ["false"],
    "maxFetchRate": ["2.0"],
    "avoidEmptyBatches": ["true", "false"],
    "internal.avoidEmptyBatches": ["true"],
    "metadataCommitterType": ["HDFS", "DYNAMODB"],
    "metadataPath": ["/tmp/metadata"],
    "dynamodb.tableName": ["meta"],
    "dynamodb.region": ["eu-west-1"],
    "dynamodb.endpointUrl": ["http://127.0.0.1:8000"],
    "awsAccessKeyId": ["AKIDEXAMPLE"],
    "awsSecretKey": ["secret-example"],
    "sessionToken": ["token-example"],
    "stsRoleArn": ["arn:aws:iam::123456789012:role/reader"],
    "stsSessionName": ["session"],
    "stsExternalId": ["external"],
    "stsEndpointUrl": ["https://sts.us-east-1.amazonaws.com"],
    "credentialProviderClass": [PROVIDER_CLASS],
    "credentialProviderParam": ["param"],
    "proxyAddress": ["proxy.corp"],
    "proxyPort": ["3128"],
    "proxyUsername": ["svc"],
    "proxyPassword": ["proxy-secret"],
    "sink.proxyAddress": ["proxy.corp"],
    "sink.proxyPort": ["3128"],
    "sink.proxyUsername": ["svc"],
    "sink.proxyPassword": ["proxy-secret"],
    "sink.producer": ["KPL", "JAVA"],
    "sink.threadingModel": ["POOLED"],
    "sink.metricsLevel": ["none", "summary"],
    "sink.stsEndpointUrl": ["https://sts.local:8443"],
}

PROVIDER_SOURCE = """
package rules;

import io.sparkkinesis.credentials.KinesisCredentials;
import io.sparkkinesis.credentials.KinesisCredentialsProvider;

public class Provider implements KinesisCredentialsProvider {
  public Provider(String param) {}

  @Override
  public KinesisCredentials resolve() {
    return KinesisCredentials.of("id", "secret");
  }
}
"""

BUILDERS = {"source": KinesisSource, "sink": KinesisSink}
Case = tuple[str, dict[str, str]]
Outcome = tuple[bool, str | None, str | None]


@pytest.fixture(scope="module")
def rules():
    return load_option_rules()


@pytest.fixture(scope="module")
def scopes():
    return {info.key: info.scope for info in load_option_table()}


def _applies(scope: str, side: str) -> bool:
    return scope in (side, "both")


def generate_cases(rules, scopes) -> list[Case]:
    """Every combination of each rule's options, then seeded random mixtures of all of them."""
    cases: list[Case] = []
    for rule in rules:
        # With the options of the rules that share one with it: a rule checked later is reached
        # only where the earlier ones hold (fan-out-not-paced needs a consumer name set).
        own = set(rule.option_keys())
        near = [key for other in rules if own & set(other.option_keys()) for key in other.option_keys()]
        for side in ("source", "sink"):
            if not rule.applies_to(side):
                continue
            keys = [key for key in dict.fromkeys(near) if _applies(scopes[key], side)]
            for values in itertools.product(*[[None, *SAMPLES[key]] for key in keys]):
                given = {key: value for key, value in zip(keys, values, strict=True) if value is not None}
                cases.append((side, _with_stream(given, keys)))
    every_key = sorted({key for rule in rules for key in rule.option_keys()})
    rng = random.Random(16)
    for _ in range(300):
        side = rng.choice(["source", "sink"])
        keys = [key for key in every_key if _applies(scopes[key], side) and rng.random() < 0.3]
        given = {key: rng.choice(SAMPLES[key]) for key in keys}
        cases.append((side, _with_stream(given, keys)))
    return cases


def _with_stream(given: dict[str, str], chosen: list[str]) -> dict[str, str]:
    # A stream unless the case is about naming it; a region so that the environment plays no part.
    if "consumerArn" in given:
        # The jar matches consumer ARNs to the streams read (a check it does not state as data): read their stream.
        given = {k: v for k, v in given.items() if k not in ("streamName", "streamArn")}
        chosen = [k for k in chosen if k not in ("streamName", "streamArn")]
    stream = {} if {"streamName", "streamArn"} & set(chosen) else {"streamName": "orders"}
    return {**stream, "region": "us-east-1", **given}


def python_outcome(side: str, options: dict[str, str]) -> Outcome:
    builder = BUILDERS[side]
    fields = {spec.info.key: spec for spec in option_fields(builder)}
    kwargs: dict[str, Any] = {}
    for key, text in options.items():
        spec = fields[key]
        kind = spec.info.type
        kwargs[spec.name] = float(text) if kind == "decimal" else int(text) if kind == "integer" else text
        kwargs[spec.name] = text == "true" if kind == "boolean" else kwargs[spec.name]
    try:
        builder(**kwargs)
    except OptionRuleError as error:
        return False, error.rule_id, error.rule_message
    return True, None, None


@pytest.fixture(scope="module")
def provider_classes(tmp_path_factory) -> str:
    workdir = tmp_path_factory.mktemp("rules-provider")
    source = workdir / "rules" / "Provider.java"
    source.parent.mkdir()
    source.write_text(PROVIDER_SOURCE)
    classes = workdir / "classes"
    subprocess.run(
        ["javac", "-d", str(classes), "-cp", os.pathsep.join(jar_paths()), str(source)], check=True, timeout=120
    )
    return str(classes)


def jar_outcomes(cases: list[Case], provider_classes: str) -> list[Outcome]:
    return [(r["accepted"], r["rule"], r["message"]) for r in check_in_jar(cases, provider_classes)]


@pytest.fixture(scope="module")
def compared(rules, scopes, provider_classes):
    cases = generate_cases(rules, scopes)
    return cases, jar_outcomes(cases, provider_classes)


def mismatches(cases: list[Case], jar: list[Outcome]) -> list[str]:
    found = []
    for (side, options), in_jar in zip(cases, jar, strict=True):
        in_python = python_outcome(side, options)
        if in_python != in_jar:
            found.append(f"{side} {options}: python {in_python}, jar {in_jar}")
    return found


def test_samples_cover_every_option_a_rule_reads(rules):
    assert {key for rule in rules for key in rule.option_keys()} <= set(SAMPLES)


def test_every_rule_fires_identically_in_python_and_in_the_jar(rules, compared):
    cases, jar = compared
    assert mismatches(cases, jar) == []
    # The inputs reach every rule, and both outcomes: cannot pass with an empty or one-sided set.
    fired = {outcome[1] for outcome in jar}
    assert {rule.id for rule in rules} <= fired
    assert any(outcome[0] for outcome in jar)


def test_the_comparison_notices_a_rule_that_one_side_lacks(rules, compared, monkeypatch):
    import spark_kinesis.builders as builders

    dropped = "fan-out-not-paced"
    monkeypatch.setattr(builders, "bundled_option_rules", lambda: tuple(r for r in rules if r.id != dropped))
    cases, jar = compared
    found = mismatches(cases, jar)
    assert found and all(dropped in line for line in found)
