-- Up Migration
-- Invitations: "an unexpired pending invitation of the same kind is reused" did not hold under
-- concurrency (two identical requests both found none and made two invitations, two
-- notifications). No unique constraint can say it (expiry depends on now()), so one transaction at
-- a time decides per hub and phone: a transaction advisory lock per (hub, phone), taken in phone
-- order so that two requests naming the same phones cannot deadlock, and the next statement sees
-- what the previous holder committed.
create or replace function app_private.invite_phones(p_hub_id uuid, p_phones text[], p_requires_approval boolean)
  returns setof app.hub_invitations
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_phone text;
  v_invitee uuid;
  v_invitation app.hub_invitations;
begin
  for v_phone in select distinct p from unnest(p_phones) p order by p loop
    perform pg_advisory_xact_lock(hashtextextended('hub_invitation:' || p_hub_id || ':' || v_phone, 0));
    select pi.user_id into v_invitee from app.phone_identities pi where pi.phone_e164 = v_phone;
    continue when v_invitee = app.viewer_id()
      or exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = v_invitee);
    select * into v_invitation from app.hub_invitations i
      where i.hub_id = p_hub_id and i.phone_e164 = v_phone and i.status = 'invited' and i.expires_at > now()
        and i.requires_admin_approval = p_requires_approval
      order by i.created_at desc limit 1;
    if not found then
      insert into app.hub_invitations (hub_id, invited_by, phone_e164, invitee_id, requires_admin_approval)
        values (p_hub_id, app.viewer_id(), v_phone, v_invitee, p_requires_approval)
        returning * into v_invitation;
      if v_invitee is not null then
        insert into app.notifications (recipient_id, type, actor_id, invitation_id)
          values (v_invitee, 'hub_invite_received', app.viewer_id(), v_invitation.id);
      end if;
    end if;
    return next v_invitation;
  end loop;
  perform app_private.touch_hub_activity(p_hub_id, app.viewer_id());
end
$$;

-- Down Migration
create or replace function app_private.invite_phones(p_hub_id uuid, p_phones text[], p_requires_approval boolean) RETURNS SETOF app.hub_invitations
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
declare
  v_phone text;
  v_invitee uuid;
  v_invitation app.hub_invitations;
begin
  for v_phone in select distinct p from unnest(p_phones) p loop
    select pi.user_id into v_invitee from app.phone_identities pi where pi.phone_e164 = v_phone;
    continue when v_invitee = app.viewer_id()
      or exists (select from app.hub_memberships m where m.hub_id = p_hub_id and m.user_id = v_invitee);
    select * into v_invitation from app.hub_invitations i
      where i.hub_id = p_hub_id and i.phone_e164 = v_phone and i.status = 'invited' and i.expires_at > now()
        and i.requires_admin_approval = p_requires_approval
      order by i.created_at desc limit 1;
    if not found then
      insert into app.hub_invitations (hub_id, invited_by, phone_e164, invitee_id, requires_admin_approval)
        values (p_hub_id, app.viewer_id(), v_phone, v_invitee, p_requires_approval)
        returning * into v_invitation;
      if v_invitee is not null then
        insert into app.notifications (recipient_id, type, actor_id, invitation_id)
          values (v_invitee, 'hub_invite_received', app.viewer_id(), v_invitation.id);
      end if;
    end if;
    return next v_invitation;
  end loop;
  perform app_private.touch_hub_activity(p_hub_id, app.viewer_id());
end
$$;
