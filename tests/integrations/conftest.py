"""``flower_app/`` is a Flower app run by Flower's own processes (tests/multiprocess/test_flower_deployment.py), not by pytest."""

collect_ignore = ["flower_app"]
