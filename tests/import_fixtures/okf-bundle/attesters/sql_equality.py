"""Compares the SQL a run executed with the sanctioned query (a fixture: never run)."""


def attest(receipt: dict[str, str], sanctioned: str) -> bool:
    return " ".join(receipt["executed_sql"].split()) == " ".join(sanctioned.split())
