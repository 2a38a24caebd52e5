"""Checks a `ncclscope state --json` document against the comm fixture's values."""
import json
import sys

document = json.load(open(sys.argv[1]))
fixture = json.loads(sys.argv[2])
method = sys.argv[3]

assert document["schema"] == "ncclscope.state/1", document["schema"]
assert document["discovery"]["method"] == method, document["discovery"]
assert document["nccl"]["version"] == "2.28.9", document["nccl"]
comms = document["communicators"]
assert [c["address"] for c in comms] == [fixture["comm"]], comms
comm = comms[0]
expected = {"comm_hash": fixture["comm_hash"], "rank": 1, "nranks": 2, "cuda_dev": 1, "nvml_dev": 3,
            "bus_id": "0000:19:00.0", "node": 0, "nnodes": 1, "local_rank": 1, "local_ranks": 2,
            "nchannels": 2, "coll_op_count": 8}
for key, value in expected.items():
    assert comm[key] == value, (key, comm[key], value)
assert comm["seq_launched"] == {"Broadcast": 0, "Reduce": 0, "AllGather": 1, "ReduceScatter": 0,
                                "AllReduce": 7}, comm["seq_launched"]
assert comm["p2p_op_count"]["total"] == 3
assert comm["health"] == {"async_result": "ncclSuccess", "abort_flag": False, "destroy_flag": False,
                          "init_state": "ncclSuccess", "finalize_called": False, "revoked": False,
                          "blocking": False, "proxy_async_result": "ncclSuccess"}, comm["health"]
assert [ch["ring"]["next"] for ch in comm["channels"]] == [0, 0]
assert comm["channels"][0]["ring"]["user_ranks"] == [1, 0]
op = comm["proxy_ops"][0]
assert op["address"] == fixture["proxy_args"] and op["op_count"] == 42 and op["collective"] == "AllReduce"
assert op["subs"][0]["posted"] == 4 and op["subs"][0]["done"] == 2 and op["subs"][0]["nsteps"] == 8
task = comm["planned"]["colls"][0]
assert task["address"] == fixture["task"] and task["collective"] == "AllReduce" and task["count"] == 1024
assert task["datatype"] == "ncclFloat32" and task["op"] == "ncclSum"
assert comm["planned"]["in_group"] is False
assert comm["warnings"] == [] and document["errors"] == [], (comm["warnings"], document["errors"])
