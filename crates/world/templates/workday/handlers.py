"""Workday world tools; every mutation goes through the schema store.

Errors are raised as ``<Fault>: <Workday validation message>``, mirroring the SOAP
faults the Workday Web Services declare (``Validation_Fault``, ``Processing_Fault``,
``Authentication_Fault``). The message text is quoted from the pinned Staffing XSD.
"""

from gateway_env import store, tool


@tool(name="get_worker")
def get_worker(Worker_ID):
    return store.get("workday_workers", {"Worker_ID": Worker_ID})


def _reference_values(reference):
    if not isinstance(reference, dict):
        return set()
    return {
        item["value"]
        for item in reference.get("ID", [])
        if isinstance(item, dict) and isinstance(item.get("value"), str)
    }


def _worker_position_id(worker):
    employment = worker.get("Employment_Data") or {}
    jobs = employment.get("Worker_Job_Data") or []
    primary = next((job for job in jobs if job.get("Primary_Job") is True), None)
    job = primary or (jobs[0] if jobs else None)
    if not isinstance(job, dict):
        return None
    position = job.get("Position_Data") or {}
    return position.get("Position_ID")


def _worker_organization_ids(worker):
    organizations = worker.get("Organization_Data") or {}
    memberships = organizations.get("Worker_Organization_Data") or []
    result = set()
    for membership in memberships:
        result.update(_reference_values(membership.get("Organization_Reference")))
        summary = membership.get("Organization_Data") or {}
        reference_id = summary.get("Organization_Reference_ID")
        if isinstance(reference_id, str):
            result.add(reference_id)
    return result


@tool(name="list_workers")
def list_workers(Organization_ID=None):
    workers = store.list("workday_workers")
    if Organization_ID is None:
        return workers

    positions = {
        position["Position_ID"]: _reference_values(position.get("Supervisory_Organization_Reference"))
        for position in store.list("workday_positions")
    }
    return [
        worker
        for worker in workers
        if Organization_ID in _worker_organization_ids(worker)
        or Organization_ID in positions.get(_worker_position_id(worker), set())
    ]


@tool(name="hire_employee")
def hire_employee(worker):
    if store.get("workday_workers", {"Worker_ID": worker["Worker_ID"]}) is not None:
        raise ValueError("Validation_Fault: Applicant has already been hired.")
    position_id = _worker_position_id(worker)
    if position_id is None or store.get("workday_positions", {"Position_ID": position_id}) is None:
        raise ValueError("Validation_Fault: Position information for a worker is required.")
    return store.insert("workday_workers", worker, source={"record": "tool.hire_employee"})
