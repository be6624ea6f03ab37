-- Up Migration
-- Per-address sign-in limits could be dodged (contract section 3, amended): an IPv4 address at its
-- limit passed again written as the IPv4-mapped IPv6 address `::ffff:203.0.113.78`, and one client
-- holds a whole IPv6 /64 (35 addresses of one /64 got 35 sessions against a limit of 30). The key of
-- a client address is now its IPv4 address for an IPv4-mapped one, and its /64 network for any
-- other IPv6 address. A value that is not an address (no socket address at all) keys as given.
create function app_private.client_address_key(p_address text)
  returns text
  language plpgsql immutable
  set search_path = pg_catalog
  as $$
declare
  v_address inet;
begin
  begin
    -- A zone index (fe80::1%eth0) names a link, not a client.
    v_address := split_part(p_address, '%', 1)::inet;
  exception when invalid_text_representation then
    return p_address;
  end;
  if family(v_address) = 4 then
    return host(v_address);
  elsif v_address << inet '::ffff:0.0.0.0/96' then
    return host(inet '0.0.0.0' + (v_address - inet '::ffff:0.0.0.0'));
  end if;
  return network(set_masklen(v_address, 64))::text;
end
$$;

-- One request of a client address to a limited sign-in endpoint (replaces 0095's version): the
-- address is keyed by app_private.client_address_key.
create or replace function app.consume_address_limit(p_bucket text, p_address text)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if p_bucket not in ('otp_request', 'anonymous_session') then
    raise exception 'unknown address limit %', p_bucket;
  end if;
  return app_private.consume_sliding_limit(
    'address:' || p_bucket || ':' || app_private.client_address_key(p_address), 30, interval '5 minutes');
end
$$;

-- Down Migration
create or replace function app.consume_address_limit(p_bucket text, p_address text)
  returns int
  language plpgsql volatile security definer
  set search_path = pg_catalog
  as $$
begin
  if p_bucket not in ('otp_request', 'anonymous_session') then
    raise exception 'unknown address limit %', p_bucket;
  end if;
  return app_private.consume_sliding_limit('address:' || p_bucket || ':' || p_address, 30, interval '5 minutes');
end
$$;

drop function app_private.client_address_key(text);
