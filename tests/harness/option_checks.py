"""The jar's own option parsing (``io.sparkkinesis.tools.CheckOptionsTool``), for tests that compare the Python
builders' checks with it: every case in one JVM, with the environment's region left out of it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def check_in_jar(cases: Sequence[tuple[str, Mapping[str, str]]], *extra_classpath: str) -> list[dict[str, Any]]:
    """The jar's verdict on each ``(side, options)`` case (keys without ``kinesis.``), in order.

    Each result has ``accepted``, ``rule`` (a rule id, or None) and ``message``.
    """
    import pyspark
    from spark_kinesis import jar_paths

    spark_jars = str(Path(pyspark.__file__).parent / "jars" / "*")
    classpath = os.pathsep.join([*jar_paths(), *extra_classpath, spark_jars])
    request = {
        "region": None,
        "cases": [{"side": side, "options": {"kinesis." + k: v for k, v in opts.items()}} for side, opts in cases],
    }
    done = subprocess.run(
        ["java", "-cp", classpath, "io.sparkkinesis.tools.CheckOptionsTool"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results: list[dict[str, Any]] = json.loads(done.stdout)["results"]
    return results
