-- Argo CD health of the ducklake.dev kinds (one script for all five; see argocd-cm.yaml).
-- Healthy: Ready=True (DuckLakeJob: Succeeded). Progressing: not reconciled yet, waiting for a
-- dependency, or a run Pending/Running. Degraded: refused (Blocked, invalid, unsupported
-- format), or a run Failed. Suspended: a suspended policy, a cancelled run.
local hs = {status = "Progressing", message = "Waiting for the operator"}
if obj.status == nil then
  return hs
end
local function cond(t)
  if obj.status.conditions == nil then return nil end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == t then return c end
  end
  return nil
end
if obj.kind == "DuckLakeJob" then
  local state = obj.status.state or "Pending"
  local message = obj.status.message or state
  if state == "Succeeded" then return {status = "Healthy", message = message} end
  if state == "Failed" then return {status = "Degraded", message = message} end
  if state == "Cancelled" then return {status = "Suspended", message = message} end
  return {status = "Progressing", message = message}
end
if obj.kind == "DuckLakeMaintenancePolicy" and obj.spec ~= nil and obj.spec.suspend then
  return {status = "Suspended", message = "suspended"}
end
local gen = obj.metadata.generation
if obj.status.observedGeneration ~= nil and gen ~= nil and obj.status.observedGeneration < gen then
  return hs
end
local conflict = cond("Conflict")
if conflict ~= nil and conflict.status == "True" then
  return {status = "Degraded", message = conflict.message or "Conflict"}
end
local ready = cond("Ready")
if ready == nil then return hs end
if ready.status == "True" then return {status = "Healthy", message = ready.message or ""} end
local permanent = {Blocked = true, InvalidSpec = true, UnsupportedFormat = true, DeletionBlocked = true}
if permanent[ready.reason] then return {status = "Degraded", message = ready.message or ready.reason} end
return {status = "Progressing", message = ready.message or ready.reason or ""}
