"""SCIM 2.0 provisioning over the wire, with the request bodies Okta and Microsoft Entra ID
document: users and groups created, found by filter, replaced and patched (Okta's value
objects, Entra's paths and "False" strings, the enterprise extension), deactivated and deleted,
and what each change does to the very next search; the discovery routes; errors in SCIM's
shape."""
import base64
import json

import pytest

from wire import ADMIN_ID, ADMIN_SECRET

SCIM = "/scim/v2"
BEARER = "Bearer " + base64.b64encode(f"{ADMIN_ID}:{ADMIN_SECRET}".encode()).decode()
CT = {"Content-Type": "application/scim+json"}
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


def scim(server, method, path, body=None, key=BEARER):
    return server.request(method, SCIM + path, body, headers=CT, key=key)


def okta_user(name, given, family, active=True):
    return {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": name,
            "name": {"givenName": given, "familyName": family},
            "emails": [{"primary": True, "value": name, "type": "work"}],
            "displayName": f"{given} {family}", "locale": "en-US", "externalId": "00u" + given,
            "groups": [], "password": "never-stored-1!", "active": active}


def setup_index(server):
    """A collection whose chunks name SCIM groups and users, and a role that lets the
    Engineering group search it."""
    server.model({"op": "put_role", "id": "reader",
                  "permissions": [{"resource": "collection:*", "action": "*"}]})
    st, _, b = server.request("PUT", "/kb", {"mappings": {"properties": {"text": {"type": "text"}}}})
    assert st == 200, b
    lines = []
    for doc, allowed in (("eng-doc", ["group:Engineering-Team"]),
                         ("alice-doc", ["user:alice@corp.com"]), ("other", ["group:hr"])):
        lines += [{"index": {"_index": "kb", "_id": doc}},
                  {"text": "design notes", "allowed_groups": allowed}]
    raw = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    st, _, b = server.request("POST", "/_bulk", raw=raw,
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"], b


def readable(server, who):
    st, _, b = server.request("POST", "/kb/_search", {"size": 10},
                              headers={"es-security-runas-user": who})
    return sorted(h["_id"] for h in b["hits"]["hits"]) if st == 200 else st


def test_discovery_routes(server):
    st, hdrs, b = scim(server, "GET", "/ServiceProviderConfig")
    assert st == 200 and b["patch"]["supported"] is True and b["filter"]["supported"] is True
    assert hdrs["Content-Type"].startswith("application/scim+json")
    st, _, b = scim(server, "GET", "/Schemas")
    assert st == 200 and {r["id"] for r in b["Resources"]} == {
        "urn:ietf:params:scim:schemas:core:2.0:User", "urn:ietf:params:scim:schemas:core:2.0:Group"}
    st, _, b = scim(server, "GET", "/ResourceTypes")
    assert st == 200 and {r["endpoint"] for r in b["Resources"]} == {"/Users", "/Groups"}


def test_okta_flow_from_lookup_to_deactivation(server):
    setup_index(server)
    st, _, b = scim(server, "GET", '/Users?filter=userName%20eq%20%22alice%40corp.com%22'
                                   '&startIndex=1&count=100')
    assert st == 200 and b["totalResults"] == 0 and b["Resources"] == []
    st, hdrs, u = scim(server, "POST", "/Users", okta_user("alice@corp.com", "Alice", "Smith"))
    assert st == 201, u
    assert u["id"] == "alice@corp.com" and u["active"] is True
    assert hdrs["Location"].endswith("/scim/v2/Users/alice@corp.com")
    assert "password" not in u and u["name"]["givenName"] == "Alice"
    assert u["meta"]["resourceType"] == "User" and u["meta"]["created"]
    # found by its userName, without regard to case
    st, _, b = scim(server, "GET", '/Users?filter=userName%20eq%20%22ALICE%40corp.com%22')
    assert b["totalResults"] == 1 and b["Resources"][0]["id"] == "alice@corp.com"
    # the same userName again: 409 uniqueness
    st, _, e = scim(server, "POST", "/Users", okta_user("Alice@Corp.com", "A", "S"))
    assert st == 409 and e["scimType"] == "uniqueness" and e["schemas"] == [ERROR]
    st, _, g = scim(server, "POST", "/Groups", {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
        "displayName": "Engineering Team", "members": [{"value": "alice@corp.com",
                                                         "display": "alice@corp.com"}]})
    assert st == 201, g
    assert g["id"] == "Engineering-Team" and g["displayName"] == "Engineering Team"
    assert [m["value"] for m in g["members"]] == ["alice@corp.com"]
    server.model({"op": "grant", "to": "Engineering-Team", "to_kind": "group",
                  "role": "reader"})
    assert readable(server, "alice@corp.com") == ["alice-doc", "eng-doc"]
    st, _, u = scim(server, "GET", "/Users/alice@corp.com")
    assert [x["value"] for x in u["groups"]] == ["Engineering-Team"]
    # Okta deactivates with a value object; the very next search reads nothing
    st, _, u = scim(server, "PATCH", "/Users/alice@corp.com", {
        "schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": False}}]})
    assert st == 200 and u["active"] is False, u
    assert readable(server, "alice@corp.com") == 404
    _, _, alice = server.key_for("alice@corp.com")
    st, _, d = server.request("POST", "/api/auth/is-authorized", {
        "permission": {"resource": "collection:kb", "action": "search"}}, key=alice)
    assert d["data"]["reason"] == "PERMISSION_DENIED_EXPLICITLY"
    # and reactivates
    st, _, u = scim(server, "PATCH", "/Users/alice@corp.com", {
        "schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": True}}]})
    assert u["active"] is True
    assert readable(server, "alice@corp.com") == ["alice-doc", "eng-doc"]
    # Okta renames a group with a value object naming its id; the id stays
    st, _, g = scim(server, "PATCH", "/Groups/Engineering-Team", {
        "schemas": [PATCH], "Operations": [{"op": "replace", "value": {
            "id": "Engineering-Team", "displayName": "Engineering"}}]})
    assert st == 200 and g["displayName"] == "Engineering" and g["id"] == "Engineering-Team"
    assert readable(server, "alice@corp.com") == ["alice-doc", "eng-doc"]
    # PUT replaces the user (Okta's profile push) and keeps the subject's groups
    body = okta_user("alice@corp.com", "Alice", "Jones")
    st, _, u = scim(server, "PUT", "/Users/alice@corp.com", body)
    assert st == 200 and u["name"]["familyName"] == "Jones"
    assert readable(server, "alice@corp.com") == ["alice-doc", "eng-doc"]


def test_entra_paths_strings_and_member_removal(server):
    setup_index(server)
    for name in ("bob@corp.com", "carol@corp.com"):
        st, _, u = scim(server, "POST", "/Users", {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User",
                        "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
            "externalId": name.split("@")[0], "userName": name, "active": True,
            "displayName": name, "emails": [{"primary": True, "type": "work", "value": name}],
            "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "R&D"}})
        assert st == 201, u
    st, _, b = scim(server, "GET", '/Users?filter=externalId%20eq%20%22bob%22')
    assert b["totalResults"] == 1 and b["Resources"][0]["userName"] == "bob@corp.com"
    st, _, u = scim(server, "PATCH", "/Users/bob@corp.com", {"schemas": [PATCH], "Operations": [
        {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "robert@corp.com"},
        {"op": "Add", "path": "title", "value": "Staff Engineer"},
        {"op": "Replace",
         "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
         "value": "Platform"},
        {"op": "Replace", "path": "active", "value": "False"}]})
    assert st == 200, u
    assert u["emails"][0]["value"] == "robert@corp.com" and u["title"] == "Staff Engineer"
    assert u["urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"]["department"] == \
        "Platform"
    assert u["active"] is False
    st, _, g = scim(server, "POST", "/Groups", {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "externalId": "e1",
        "displayName": "Engineering Team", "members": []})
    assert st == 201
    server.model({"op": "grant", "to": "Engineering-Team", "to_kind": "group",
                  "role": "reader"})
    st, _, g = scim(server, "PATCH", "/Groups/Engineering-Team", {"schemas": [PATCH],
        "Operations": [{"op": "Add", "path": "members", "value": [
            {"value": "bob@corp.com"}, {"value": "carol@corp.com"}]}]})
    assert st == 200 and sorted(m["value"] for m in g["members"]) == [
        "bob@corp.com", "carol@corp.com"]
    assert readable(server, "carol@corp.com") == ["eng-doc"]
    assert readable(server, "bob@corp.com") == 404          # inactive
    # Entra removes a member by listing it; the other stays
    st, _, g = scim(server, "PATCH", "/Groups/Engineering-Team", {"schemas": [PATCH],
        "Operations": [{"op": "Remove", "path": "members", "value": [{"value": "carol@corp.com"}]}]})
    assert [m["value"] for m in g["members"]] == ["bob@corp.com"]
    assert readable(server, "carol@corp.com") == 404          # no group, no permission
    # the RFC's form: a filter in the path
    st, _, g = scim(server, "PATCH", "/Groups/Engineering-Team", {"schemas": [PATCH],
        "Operations": [{"op": "remove", "path": "members[value eq \"bob@corp.com\"]"}]})
    assert g["members"] == []
    st, _, b = scim(server, "GET", '/Groups?filter=displayName%20eq%20%22engineering%20team%22'
                                   '&excludedAttributes=members')
    assert b["totalResults"] == 1 and "members" not in b["Resources"][0]


def test_delete_removes_access_on_the_next_request(server):
    setup_index(server)
    scim(server, "POST", "/Users", okta_user("dan@corp.com", "Dan", "D"))
    scim(server, "POST", "/Groups", {"displayName": "Engineering Team",
                                     "members": [{"value": "dan@corp.com"}]})
    server.model({"op": "grant", "to": "Engineering-Team", "to_kind": "group",
                  "role": "reader"})
    assert readable(server, "dan@corp.com") == ["eng-doc"]
    st, _, b = scim(server, "DELETE", "/Users/dan@corp.com")
    assert st == 204
    assert readable(server, "dan@corp.com") == 404
    st, _, b = scim(server, "GET", "/Users/dan@corp.com")
    assert st == 404 and b["schemas"] == [ERROR]
    st, _, b = scim(server, "DELETE", "/Groups/Engineering-Team")
    assert st == 204
    st, _, b = scim(server, "GET", "/Groups/Engineering-Team")
    assert st == 404


def test_lists_page(server):
    for i in range(5):
        st, _, _ = scim(server, "POST", "/Users", okta_user(f"u{i}@corp.com", f"U{i}", "X"))
        assert st == 201
    st, _, b = scim(server, "GET", "/Users?startIndex=2&count=2")
    assert b["totalResults"] == 5 and b["startIndex"] == 2 and b["itemsPerPage"] == 2
    assert [r["id"] for r in b["Resources"]] == ["u1@corp.com", "u2@corp.com"]
    st, _, b = scim(server, "GET", "/Users?startIndex=5&count=10")
    assert [r["id"] for r in b["Resources"]] == ["u4@corp.com"]


@pytest.mark.parametrize("method,path,body,status,scim_type", [
    ("GET", "/Users?filter=userName%20co%20%22a%22", None, 400, "invalidFilter"),
    ("GET", "/Users?filter=title%20eq%20%22x%22", None, 400, "invalidFilter"),
    ("POST", "/Users", {"name": {"givenName": "x"}}, 400, "invalidValue"),
    ("POST", "/Users", {"userName": "has space"}, 400, "invalidValue"),
    ("POST", "/Users", {"userName": "x@y", "active": "maybe"}, 400, "invalidValue"),
    ("POST", "/Groups", {"members": []}, 400, "invalidValue"),
    ("POST", "/Groups", {"displayName": "G", "members": [{"value": "nobody"}]}, 400,
     "invalidValue"),
    ("PATCH", "/Users/nobody", {"Operations": [{"op": "add", "path": "title", "value": "x"}]},
     404, None),
    ("PUT", "/Groups/nothing", {"displayName": "x"}, 404, None),
])
def test_bad_requests_get_scim_errors_and_change_nothing(server, method, path, body, status,
                                                         scim_type):
    before = server.request("GET", "/_cordon/model")[2]
    st, _, b = scim(server, method, path, body)
    assert st == status, b
    assert b["schemas"] == [ERROR] and b["status"] == str(status) and b["detail"]
    assert b.get("scimType") == scim_type
    assert server.request("GET", "/_cordon/model")[2] == before


def test_bad_patches_change_nothing(server):
    scim(server, "POST", "/Users", okta_user("eve@corp.com", "Eve", "E"))
    before = server.request("GET", "/_cordon/model")[2]
    for body in ({"Operations": []}, {"Operations": [{"op": "frobnicate", "path": "title"}]},
                 {"Operations": [{"op": "remove"}]},
                 {"Operations": [{"op": "add", "path": "title", "value": "ok"},
                                 {"op": "replace", "path": "active", "value": "perhaps"}]},
                 {"Operations": [{"op": "add", "path": "emails[type eq \"work\"", "value": 1}]}):
        st, _, b = scim(server, "PATCH", "/Users/eve@corp.com", body)
        assert st == 400 and b["schemas"] == [ERROR], (body, b)
    assert server.request("GET", "/_cordon/model")[2] == before


def test_only_provisioners_may_call(server):
    server.model({"op": "put_subject", "id": "mallory"})
    _, _, key = server.key_for("mallory")
    st, _, b = scim(server, "GET", "/Users", key=key)
    assert st == 403 and b["schemas"] == [ERROR]
    st, _, b = scim(server, "GET", "/Users", key="")
    assert st == 401
    # a subject holding manage on the model may provision
    server.model({"op": "grant", "to": "mallory", "permission": {
        "resource": "model:permissions", "action": "manage"}})
    st, _, b = scim(server, "GET", "/Users", key=key)
    assert st == 200 and b["totalResults"] == 1
